"""Find key material and passwords in synthesized templates and rendered files.

The cluster's secrets (the munge key, anything a user adds) must live in Secrets
Manager and be fetched at boot; a template, a user-data script or a bootstrap bundle
that carries one leaks it to everyone who can read the stack or the S3 asset. The
scan looks inside tar and zip archives too, since the bootstrap bundle ships as one.
Findings name the file, line and kind, never the secret itself.
"""

from __future__ import annotations

import io
import json
import math
import re
import tarfile
import zipfile
from base64 import b64decode
from binascii import Error as Base64Error
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.console import Console

from gpucluster.tables import print_table, table


class FindingKind(StrEnum):
    PRIVATE_KEY = "private-key"
    AWS_ACCESS_KEY_ID = "aws-access-key-id"
    AWS_SECRET_ACCESS_KEY = "aws-secret-access-key"
    KEY_BLOB = "key-blob"
    LITERAL_PASSWORD = "literal-password"
    # An archive that cannot be opened cannot be checked: passing it would call it clean.
    UNREADABLE_ARCHIVE = "unreadable-archive"


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    kind: FindingKind
    detail: str


MUNGE_KEY_NAME = "munge.key"
# munge's own `mungekey` writes 1024 bytes by default; anything that large and random
# that arrives as base64 text is treated as key material.
MIN_KEY_BYTES = 1024
MIN_KEY_ENTROPY = 7.0  # bits per byte; random data is ~7.8, text ~4-5
_MIN_BASE64_CHARS = math.ceil(MIN_KEY_BYTES * 4 / 3)
_BASE64_RUN = re.compile(rf"[A-Za-z0-9+/]{{{_MIN_BASE64_CHARS},}}={{0,2}}")
_PEM_PRIVATE = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_ACCESS_KEY_ID = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")
_SECRET_ACCESS_KEY = re.compile(
    r"(?i)(?:aws_?)?secret_?access_?key[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
# `password: x`, `Password = x`, Slurm's `StoragePass=x` (slurmdbd / accounting).
_PASSWORD_ASSIGNMENT = re.compile(
    r"(?i)(?<![A-Za-z])(password|passwd|storagepass|storage_pass)[\"']?\s*[:=]\s*"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;#}]+)"
)
_DYNAMIC_REFERENCE = re.compile(r"\{\{resolve:[^}]+\}\}")
_SUB_VARIABLE = re.compile(r"\$\{[^}]+\}")
_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _entropy(data: bytes) -> float:
    counts = Counter(data)
    return -sum(n / len(data) * math.log2(n / len(data)) for n in counts.values())


def _is_reference(value: str) -> bool:
    """A value that names where a password lives rather than holding it."""
    bare = value.strip("\"'")
    return (
        not bare
        or bare.startswith(("$", "{", "<", "/", "!"))
        or bare.lower() in ("null", "none", "~", "true", "false")
    )


def scan_text(name: str, text: str, passwords: bool = True) -> list[Finding]:
    """Pattern findings in one text; `passwords=False` leaves `password:` to a structural scan."""
    findings = [
        Finding(name, _line_of(text, m.start()), FindingKind.PRIVATE_KEY, f"PEM block: {m.group(1)}")
        for m in _PEM_PRIVATE.finditer(text)
    ]
    findings += [
        Finding(
            name,
            _line_of(text, m.start()),
            FindingKind.AWS_ACCESS_KEY_ID,
            f"access key id {m.group()[:4]}... (long-term or session credentials)",
        )
        for m in _ACCESS_KEY_ID.finditer(text)
    ]
    findings += [
        Finding(
            name,
            _line_of(text, m.start()),
            FindingKind.AWS_SECRET_ACCESS_KEY,
            "secret access key assigned literally",
        )
        for m in _SECRET_ACCESS_KEY.finditer(text)
    ]
    for m in _BASE64_RUN.finditer(text):
        try:
            data = b64decode(m.group() + "=" * (-len(m.group()) % 4), validate=True)
        except Base64Error:
            continue
        if len(data) >= MIN_KEY_BYTES and _entropy(data) >= MIN_KEY_ENTROPY:
            findings.append(
                Finding(
                    name,
                    _line_of(text, m.start()),
                    FindingKind.KEY_BLOB,
                    f"base64 of {len(data)} random-looking bytes (munge-key-like)",
                )
            )
    if passwords:
        for m in _PASSWORD_ASSIGNMENT.finditer(text):
            if not _is_reference(m.group("value")):
                findings.append(
                    Finding(
                        name,
                        _line_of(text, m.start()),
                        FindingKind.LITERAL_PASSWORD,
                        f"{m.group(1)} set to a literal value",
                    )
                )
    return findings


# --- CloudFormation templates ------------------------------------------------------------


def _literal_parts(node: Any) -> list[str]:
    """The literal text a value would contain after deployment, leaving out what
    references and dynamic references fill in."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [part for item in node for part in _literal_parts(item)]
    if not isinstance(node, dict) or len(node) != 1:
        return []
    function, argument = next(iter(node.items()))
    if function == "Fn::Join" and isinstance(argument, list) and len(argument) == 2:
        return _literal_parts(argument[1])
    if function == "Fn::Sub":
        text = argument if isinstance(argument, str) else argument[0]
        return [_SUB_VARIABLE.sub("", text)]
    if function == "Fn::If" and isinstance(argument, list):
        return _literal_parts(argument[1:])
    if function in ("Fn::Base64", "Fn::Select"):
        return _literal_parts(argument)
    return []


def _holds_literal(value: Any) -> bool:
    return any(_DYNAMIC_REFERENCE.sub("", part).strip() for part in _literal_parts(value))


def _is_secret_key(key: str) -> bool:
    lowered = key.lower()
    return "password" in lowered or lowered == "secretstring"


def _secret_properties(node: Any, path: str) -> Iterator[tuple[str, str]]:
    """(path, key) of every password-like property holding literal text."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _secret_properties(item, f"{path}/{index}")
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key == "GenerateSecretString":
            continue  # Secrets Manager generates the value at deploy: nothing to leak.
        if _is_secret_key(key) and isinstance(value, str | dict) and _holds_literal(value):
            yield f"{path}/{key}", key
        else:
            yield from _secret_properties(value, f"{path}/{key}")


def _line_in_block(lines: list[str], anchor: str, key: str) -> int:
    start = next((i for i, line in enumerate(lines) if f'"{anchor}"' in line), 0)
    hit = next((i for i in range(start, len(lines)) if f'"{key}"' in lines[i]), start)
    return hit + 1


def scan_template(name: str, text: str, template: dict[str, Any]) -> list[Finding]:
    """Password-like properties and parameter defaults with literal values."""
    lines = text.splitlines()
    findings: list[Finding] = []
    for logical_id, resource in (template.get("Resources") or {}).items():
        if not isinstance(resource, dict):
            continue
        for path, key in _secret_properties(resource.get("Properties", {}), f"Resources/{logical_id}"):
            findings.append(
                Finding(
                    name,
                    _line_in_block(lines, logical_id, key),
                    FindingKind.LITERAL_PASSWORD,
                    f"{path} is literal; use a {{{{resolve:secretsmanager:...}}}} "
                    "reference or GenerateSecretString",
                )
            )
    for parameter, spec in (template.get("Parameters") or {}).items():
        default = spec.get("Default") if isinstance(spec, dict) else None
        if "password" in parameter.lower() and isinstance(default, str) and default:
            findings.append(
                Finding(
                    name,
                    _line_in_block(lines, parameter, "Default"),
                    FindingKind.LITERAL_PASSWORD,
                    f"Parameters/{parameter} has a literal Default",
                )
            )
    return findings


# --- files and archives ----------------------------------------------------------------


def _cloudformation(text: str) -> dict[str, Any] | None:
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return document if isinstance(document, dict) and "Resources" in document else None


def _scan_archive(name: str, data: bytes) -> list[Finding]:
    findings: list[Finding] = []
    if name.lower().endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    findings += scan_bytes(f"{name}!{info.filename}", archive.read(info))
        return findings
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            if extracted is not None:
                findings += scan_bytes(f"{name}!{member.name}", extracted.read())
    return findings


def scan_bytes(name: str, data: bytes) -> list[Finding]:
    """One file's content, by name; archives are opened and their members scanned."""
    findings: list[Finding] = []
    if Path(name.rsplit("!", 1)[-1]).name == MUNGE_KEY_NAME:
        findings.append(Finding(name, 1, FindingKind.KEY_BLOB, "a munge key file"))
    lowered = name.lower()
    if lowered.endswith(_ARCHIVE_SUFFIXES):
        try:
            return findings + _scan_archive(name, data)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
            # Its members may hold anything; still read what is there as text.
            findings.append(
                Finding(
                    name,
                    1,
                    FindingKind.UNREADABLE_ARCHIVE,
                    f"cannot be opened ({error}); its contents were not checked",
                )
            )
    text = data.decode("utf-8", errors="replace")
    template = _cloudformation(text) if lowered.endswith(".json") else None
    findings += scan_text(name, text, passwords=template is None)
    if template is not None:
        findings += scan_template(name, text, template)
    return findings


def scan_path(root: str | Path) -> list[Finding]:
    """Every file under `root` (or `root` itself); archive members are `archive!member`."""
    root = Path(root)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    return [finding for path in files for finding in scan_bytes(path.as_posix(), path.read_bytes())]


def run_scan(paths: Sequence[str | Path]) -> int:
    """`gpucluster scan`: 0 when clean, 1 with findings, 2 when a path does not exist."""
    console = Console(soft_wrap=True)  # each message on one line in a CI log
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        for path in missing:
            console.print(f"{path}: does not exist; pass a cdk.out or rendered-files directory", markup=False)
        return 2
    findings = [f for path in paths for f in scan_path(path)]
    if not findings:
        console.print(f"[green]no key material or passwords in {', '.join(map(str, paths))}[/]")
        return 0
    rows = [(f.file, str(f.line), str(f.kind), f.detail) for f in findings]
    print_table(console, table("secrets found", ("file", "line", "kind", "detail"), rows))
    console.print(
        "[bold red]Move these into Secrets Manager and fetch them at boot; "
        "rotate any credential that was committed or deployed.[/]"
    )
    return 1


if __name__ == "__main__":
    import sys

    sys.exit(run_scan(sys.argv[1:] or ["cdk.out"]))

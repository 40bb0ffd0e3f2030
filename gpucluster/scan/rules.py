"""What counts as key material or a password: in one text, and in a CloudFormation template.

The cluster's secrets (the munge key, anything a user adds) must live in Secrets
Manager and be fetched at boot; a template, a user-data script or a bootstrap bundle
that carries one leaks it to everyone who can read the stack or the S3 asset.
Findings name the file, line and kind, never the secret itself. Which files are read
(directories, links, archives) is gpucluster.scan.files' job.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from gpucluster.json_input import JsonProblem, parse_json
from gpucluster.munge_key import MUNGE_KEY_LENGTH


class FindingKind(StrEnum):
    PRIVATE_KEY = "private-key"
    AWS_ACCESS_KEY_ID = "aws-access-key-id"
    AWS_SECRET_ACCESS_KEY = "aws-secret-access-key"
    KEY_BLOB = "key-blob"
    LITERAL_PASSWORD = "literal-password"
    LOGIN_PASSWORD = "login-password"


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    kind: FindingKind
    detail: str


MUNGE_KEY_NAME = "munge.key"
# The cluster's munge key is this long in both its forms (gpucluster.munge_key): Secrets
# Manager's letters and digits, and base64 of 768 random bytes. A run of base64's alphabet that
# long is key material when its characters are as random as a key's: 62 or 64 symbols drawn
# evenly carry ~5.9 bits each, while hex (4), lower-case words and digits (~5.2) and base64
# of text (~5.0-5.5) stay below the bound.
MIN_KEY_CHARS = MUNGE_KEY_LENGTH
MIN_KEY_BITS_PER_CHAR = 5.8
_BASE64_RUN = re.compile(rf"[A-Za-z0-9+/]{{{MIN_KEY_CHARS},}}")
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
# A login in a URL or an image reference: docker://user:token@registry/..., https://user:pw@host.
# Found from its `://` (a literal the search skips to), the scheme read back from there.
_URL_LOGIN = re.compile(r"://[^\s:@/'\"]+:(?P<password>[^\s@/'\"]+)@(?P<host>[A-Za-z0-9.-]+)")
_SCHEME_BEFORE = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,31}$")
# An Enroot credentials (netrc) entry, as Enroot reads it: `machine HOST login USER password PW`
# from the start of a line (a script that prints such a line with printf holds no password).
_NETRC_LOGIN = re.compile(
    r"(?m)^[ \t]*machine[ \t]+(?P<host>\S+)\s+login\s+\S+\s+password\s+(?P<password>\S+)"
)
_DYNAMIC_REFERENCE = re.compile(r"\{\{resolve:[^}]+\}\}")
_SUB_VARIABLE = re.compile(r"\$\{[^}]+\}")


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
        or set(bare) == {"*"}  # masked, as a log or a doc shows one
    )


def scan_text(name: str, text: str, passwords: bool = True) -> list[Finding]:
    """Pattern findings in one text; `passwords=False` leaves `password:` to a structural scan."""
    # The patterns that cannot start with a plain literal run only where their words are: a
    # log of hundreds of MB holds none, and their searches were most of its scan. casefold:
    # what (?i) matches (the long s of `ſecret`, too) folds to the word looked for.
    folded = text.casefold()
    findings = [
        Finding(name, _line_of(text, m.start()), FindingKind.PRIVATE_KEY, f"PEM block: {m.group(1)}")
        for m in _PEM_PRIVATE.finditer(text)
    ]
    if "AKIA" in text or "ASIA" in text:
        findings += [
            Finding(
                name,
                _line_of(text, m.start()),
                FindingKind.AWS_ACCESS_KEY_ID,
                f"access key id {m.group()[:4]}... (long-term or session credentials)",
            )
            for m in _ACCESS_KEY_ID.finditer(text)
        ]
    if "secret" in folded:
        findings += [
            Finding(
                name,
                _line_of(text, m.start()),
                FindingKind.AWS_SECRET_ACCESS_KEY,
                "secret access key assigned literally",
            )
            for m in _SECRET_ACCESS_KEY.finditer(text)
        ]
    findings += _key_blobs(name, text) + _logins(name, text)
    if passwords and ("pass" in folded):
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


def _key_blobs(name: str, text: str) -> list[Finding]:
    findings: list[Finding] = []
    for m in _BASE64_RUN.finditer(text):
        run = m.group()
        if _entropy(run.encode()) < MIN_KEY_BITS_PER_CHAR:
            continue
        detail = (
            f"{len(run)} random letters and digits (munge-key-like)"
            if run.isalnum()
            else f"base64 of {len(run) * 3 // 4} random-looking bytes (munge-key-like)"
        )
        findings.append(Finding(name, _line_of(text, m.start()), FindingKind.KEY_BLOB, detail))
    return findings


def _logins(name: str, text: str) -> list[Finding]:
    """Passwords written into a URL or a credentials line; the host is named, the login never."""
    found: list[tuple[re.Match[str], str]] = []
    if "://" in text and "@" in text:
        for m in _URL_LOGIN.finditer(text):
            scheme = _SCHEME_BEFORE.search(text, max(0, m.start() - 32), m.start())
            if scheme:
                found.append((m, f"{scheme.group()}:// reference with a password for {m.group('host')}"))
    if "machine" in text:
        found += [
            (m, f"credentials (netrc) line with a password for {m.group('host')}")
            for m in _NETRC_LOGIN.finditer(text)
        ]
    return [
        Finding(name, _line_of(text, m.start()), FindingKind.LOGIN_PASSWORD, detail)
        for m, detail in found
        if not _is_reference(m.group("password"))
    ]


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
        # One text, as deployed, so a dynamic reference joined around a Ref (what the CDK
        # writes for a generated secret) is still one reference; a Ref adds no literal.
        items = argument[1] if isinstance(argument[1], list) else [argument[1]]
        delimiter = argument[0] if isinstance(argument[0], str) else ""
        return [delimiter.join("".join(_literal_parts(item)) for item in items)]
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


def cloudformation(text: str) -> dict[str, Any] | None:
    """The template `text` holds, or None when it is not a CloudFormation template."""
    try:
        document = parse_json(text)
    except JsonProblem:
        return None
    return document if isinstance(document, dict) and "Resources" in document else None


def scan_content(name: str, data: bytes) -> list[Finding]:
    """One file's bytes, not an archive: a munge key by its name, then its text (a template's
    passwords structurally, where the text rule would flag `"Password": {` shapes)."""
    findings: list[Finding] = []
    if Path(name.rsplit("!", 1)[-1]).name == MUNGE_KEY_NAME:
        findings.append(Finding(name, 1, FindingKind.KEY_BLOB, "a munge key file"))
    text = data.decode("utf-8", errors="replace")
    template = cloudformation(text) if name.lower().endswith(".json") else None
    findings += scan_text(name, text, passwords=template is None)
    if template is not None:
        findings += scan_template(name, text, template)
    return findings

"""Change a few fields of a config file and keep everything else as the user wrote it.

`capacity buy` and `ami pin` write values AWS returned into the user's YAML. A plain
load-and-dump would drop comments, reorder keys and restyle the file, so this edits
ruamel.yaml's round-trip tree instead. ruamel.yaml still respells what it writes back
(`vpc_id: null` as `vpc_id:`, `True` as `true`, `[1,  2]` as `[1, 2]`), so every line
the edits did not make is then put back as the user wrote it: only the lines of the
fields set change.
The result is checked with the config model before anything is written, and the
file is replaced atomically (temp file in the same directory, fsync, rename): on any
failure the file on disk is the one the user had.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError
from ruamel.yaml.representer import RoundTripRepresenter

from gpucluster.bad_input import BadInput
from gpucluster.config.cluster import ClusterConfig

Key = str | int


class UtcTime(str):
    """A time written the way the examples write it: plain 2027-06-07T11:30:00Z."""

    @classmethod
    def of(cls, value: datetime) -> UtcTime:
        return cls(value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))


def _represent_time(representer: RoundTripRepresenter, value: UtcTime) -> Any:
    # Tagged as a timestamp, the emitter writes it plain (unquoted), as YAML reads it back.
    return representer.represent_scalar("tag:yaml.org,2002:timestamp", str(value))


@dataclass(frozen=True)
class Edit:
    """Set the field at `path` (keys and list indexes) to `value`; missing mappings are made.

    `comment` becomes the field's end-of-line comment (why the value is what it is)."""

    path: tuple[Key, ...]
    value: object
    comment: str | None = None


def _indentation(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as ruamel.yaml names them, sniffed from the file.

    ruamel.yaml does not detect indentation; without this, `  - name:` lists would be
    re-indented to `- name:` all through the file."""
    lines = text.splitlines()
    mapping = 2
    for before, line in zip(lines, lines[1:], strict=False):
        parent = re.match(r"^(\s*)[^\s#-][^:#]*:\s*(#.*)?$", before)
        child = re.match(r"^(\s*)(-\s+)?\S", line)
        if parent is None or child is None or line.lstrip().startswith("#"):
            continue
        step = len(child.group(1)) - len(parent.group(1))
        if child.group(2):
            offset = max(step, 0)
            return mapping, offset + len(child.group(2)), offset
        if step > 0:
            mapping = step
    return mapping, mapping + 2, mapping


def _yaml(text: str) -> YAML:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096  # never re-wrap a long line the user wrote
    mapping, sequence, offset = _indentation(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.representer.add_representer(UtcTime, _represent_time)
    return yaml


def _child(node: Any, key: Key, source: Path, where: str) -> Any:
    here = f"{where}.{key}".lstrip(".")
    if isinstance(node, CommentedSeq) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    if isinstance(node, CommentedMap) and isinstance(key, str):
        existing = node.get(key)
        if existing is None:
            node[key] = CommentedMap()
        elif not isinstance(existing, CommentedMap | CommentedSeq):
            raise BadInput(source, here, "is not a mapping", "fix the file by hand")
        return node[key]
    raise BadInput(
        source, where.lstrip(".") or "(top level)", f"has no entry {key!r}", "check the file's layout"
    )


def apply_edits(text: str, edits: Sequence[Edit], source: Path) -> str:
    """The file's text with `edits` applied; nothing else changes."""
    dumped = _dump_edited(text, edits, source)
    restored = _as_written(text, dumped, _edited_lines(dumped, edits))
    # The lines put back must mean what ruamel.yaml wrote; if a line was paired with the
    # wrong one, the respelled file is still right, only less like the user's.
    return restored if _data(restored) == _data(dumped) else dumped


def _dump_edited(text: str, edits: Sequence[Edit], source: Path) -> str:
    yaml = _yaml(text)
    try:
        root = yaml.load(text)
    except YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise BadInput(source, "(yaml)", f"cannot be read: {problem}", "fix the YAML, then re-run") from None
    if not isinstance(root, CommentedMap):
        raise BadInput(source, "(top level)", "is not a mapping of settings", "see examples/default.yaml")
    for edit in edits:
        node: Any = root
        where = ""
        for key in edit.path[:-1]:
            node = _child(node, key, source, where)
            if isinstance(node, CommentedMap) and node.fa.flow_style():
                # A one-line {type: on-demand} gains several keys: write it as a block.
                node.fa.set_block_style()
            where = f"{where}.{key}"
        last = edit.path[-1]
        if not isinstance(node, CommentedMap) or not isinstance(last, str):
            raise BadInput(
                source, where.lstrip(".") or "(top level)", "is not a mapping", "fix the file by hand"
            )
        node[last] = edit.value
        if edit.comment:
            # Two spaces before the #, as PEP 8 and most YAML in the wild write it.
            column = None if node.lc.col is None else node.lc.col + len(f"{last}: {edit.value}") + 2
            node.yaml_add_eol_comment(edit.comment, last, column=column)
    stream = io.StringIO()
    yaml.dump(root, stream)
    return stream.getvalue()


def _edited_lines(dumped: str, edits: Sequence[Edit]) -> set[int]:
    """Line numbers in `dumped` of each edited key and of the mappings above it (one written
    anew as a block, or made, changes its own line too)."""
    root = _yaml(dumped).load(dumped)
    lines: set[int] = set()
    for edit in edits:
        node = root
        for key in edit.path:
            if isinstance(node, CommentedMap):
                lines.add(node.lc.key(key)[0])
            node = node[key]
    return lines


# `  - name:` of `  - name: gpu`: the key a line sets, whatever the spelling of its value.
_KEY = re.compile(r"^\s*(?:-\s+)*(?:'[^']*'|\"[^\"]*\"|[^\s#'\"][^:#]*?):(?=\s|$)")


def _identity(line: str) -> str:
    match = _KEY.match(line)
    return match.group(0) if match else line.rstrip("\n")


def _as_written(before: str, dumped: str, edited: set[int]) -> str:
    """`dumped` with each line it shares with `before` (the same key at the same place, or
    the same text) spelled as in `before`, except the lines in `edited`."""
    old = [line if line.endswith("\n") else line + "\n" for line in before.splitlines(keepends=True)]
    new = dumped.splitlines(keepends=True)
    matcher = SequenceMatcher(None, [_identity(x) for x in old], [_identity(x) for x in new], autojunk=False)
    lines: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs = zip(range(i1, i2), range(j1, j2), strict=True)
            lines += [new[j] if j in edited else old[i] for i, j in pairs]
        else:
            lines += new[j1:j2]
    return "".join(lines)


def _data(text: str) -> Any:
    return YAML(typ="safe", pure=True).load(text)


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` at once: readers see the old file or the new one, never half."""
    mode = path.stat().st_mode & 0o7777 if path.exists() else 0o644
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    # The rename itself survives a crash only once the directory is on disk too.
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def edit_config(path: Path, edits: Sequence[Edit], now: datetime | None = None) -> ClusterConfig:
    """Apply `edits` to the config file at `path`, validate, write atomically; the new config.

    Raises BadInput (file unchanged) when the file cannot be read or the result is not a
    valid config."""
    from gpucluster.config.loader import parse_config
    from gpucluster.config.yaml_input import MAX_BYTES, YamlInputError, decode

    # Only the result must be valid: the file may hold an expired block that this edit replaces.
    try:
        with path.open("rb") as stream:
            text = decode(stream.read(MAX_BYTES + 1))
    except OSError as exc:
        raise BadInput(path, "(file)", f"cannot be read ({exc.strerror})", "check the path") from None
    except YamlInputError as exc:
        raise BadInput.from_problems(path, exc.problems) from None
    new_text = apply_edits(text, edits, path)
    cfg = parse_config(new_text, str(path), now)
    try:
        write_atomically(path, new_text)
    except OSError as exc:
        raise BadInput(
            path, "(file)", f"cannot be written ({exc.strerror})", "check the file's permissions"
        ) from None
    return cfg

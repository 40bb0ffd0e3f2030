"""The one YAML reader for cluster configs: bounded, strict about duplicates, Slurm-time safe.

Every path that reads a config (validate, synth, render, diff, the CDK app) comes
through `read_yaml`, so a hostile or mistaken file fails the same way everywhere:
a few readable problems with line numbers, never a traceback, never minutes of work.
"""

from __future__ import annotations

import re
from typing import Any

import yaml
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode

MAX_BYTES = 1024 * 1024  # a real config is a few KiB; 1 MiB leaves room for long comments
MAX_DEPTH = 32  # configs nest 4 levels; PyYAML recurses per level and overflows near 300
MAX_VALUES = 20_000  # 16 groups and every setting are ~300 values; aliases count each use
MAX_PROBLEMS = 20  # a screenful: the rest are usually the same mistake repeated


class YamlInputError(Exception):
    """The file cannot be turned into data; `problems` are one line each, without the file name."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def bounded(problems: list[str]) -> list[str]:
    """At most MAX_PROBLEMS lines, then one saying how many were left out."""
    if len(problems) <= MAX_PROBLEMS:
        return problems
    return [*problems[:MAX_PROBLEMS], f"... and {len(problems) - MAX_PROBLEMS} more problems"]


def printable(text: str) -> str:
    """Keys and values come from the user's file: keep each problem on one line."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def _where(node: Node) -> str:
    return f"line {node.start_mark.line + 1}, column {node.start_mark.column + 1}"


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader with limits, duplicate-key detection and YAML 1.2 numbers."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0
        self.duplicates: list[str] = []

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        # Composition recurses once per nesting level; stop long before Python's
        # recursion limit so a 500-deep file is a finding, not a RecursionError.
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH:
                # types-PyYAML leaves Parser.peek_event unannotated (it returns an Event).
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlInputError(
                    [
                        f"(yaml) line {mark.line + 1}: nested deeper than {MAX_DEPTH} levels; "
                        "a cluster config nests about 4 levels, so check the indentation"
                    ]
                )
            if self._nodes > MAX_VALUES:
                # types-PyYAML leaves Parser.peek_event unannotated (it returns an Event).
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise YamlInputError(
                    [
                        f"(yaml) line {mark.line + 1}: more than {MAX_VALUES} values; "
                        "a cluster config has a few hundred, so this is not a config file"
                    ]
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            # `<<` merge keys legitimately repeat and are resolved by the base class.
            if not isinstance(key_node, ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = key_node.value
            line = key_node.start_mark.line + 1
            if key in seen:
                self.duplicates.append(
                    f"(yaml) line {line}: key '{printable(str(key))}' is repeated (first on line "
                    f"{seen[key]}); YAML would silently keep only the last one, so remove one of them"
                )
            else:
                seen[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_binary(self, node: ScalarNode) -> bytes:
        raise ConstructorError(
            None,
            None,
            "binary data (!!binary) is not a setting; write the value as plain text",
            node.start_mark,
        )


# YAML 1.1 reads 1:00:00 as the base-60 integer 3600; Slurm times are written exactly
# like that, so drop the sexagesimal forms and keep them as strings (YAML 1.2 did too).
# Leading-zero octal goes as well: 0123 stays the text the user wrote (an account id).
_INT = re.compile(
    r"""^(?:[-+]?0b[0-1_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+)$""",
    re.X,
)
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_ConfigLoader.yaml_implicit_resolvers = {
    first: [
        (tag, _INT if tag.endswith(":int") else _FLOAT if tag.endswith(":float") else regexp)
        for tag, regexp in resolvers
    ]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_constructor("tag:yaml.org,2002:binary", _ConfigLoader.construct_yaml_binary)


def _count_values(data: object) -> None:
    """Aliases can make a small file expand into a huge structure: count what was built."""
    pending, count = [data], 0
    while pending:
        item = pending.pop()
        count += 1
        if count > MAX_VALUES:
            raise YamlInputError(
                [f"(yaml): more than {MAX_VALUES} values once aliases are expanded; use fewer aliases"]
            )
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)


def _size(size: int) -> str:
    return f"{size:,} bytes" + (f" ({size / 2**20:,.1f} MiB)" if size >= 2**20 else "")


def decode(raw: bytes, size: int | None = None) -> str:
    """UTF-8 text of at most MAX_BYTES, checked before any parsing. A reader that stops
    after MAX_BYTES + 1 passes the file's real `size` for the message."""
    if len(raw) > MAX_BYTES:
        shown = _size(size) if size is not None and size > MAX_BYTES else f"more than {_size(MAX_BYTES)}"
        raise YamlInputError(
            [
                f"(file): {shown} is over the {_size(MAX_BYTES)} limit for a config; "
                "pass the cluster's YAML file (a few KiB), not another file"
            ]
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise YamlInputError(
            [f"(file) line {line}: byte {exc.start + 1} is not UTF-8; save the config as UTF-8"]
        ) from None


def _reader_problem(text: str, exc: yaml.reader.ReaderError) -> str:
    line = text[: exc.position].count("\n") + 1
    return (
        f"(yaml) line {line}: control character U+{exc.character:04X} is not allowed in YAML; "
        "remove it (is this a binary file?)"
    )


_UNKNOWN_TAG = re.compile(r"could not determine a constructor for the tag '(?P<tag>[^']*)'")


def _with_fix(exc: yaml.YAMLError, reason: str) -> str:
    """`what; fix` for a YAML error: a syntax error, or a value the safe loader will not build."""
    if not isinstance(exc, ConstructorError):
        return f"{reason}; fix the YAML syntax"
    unknown = _UNKNOWN_TAG.search(reason)
    if unknown is not None:
        tag = unknown["tag"].replace("tag:yaml.org,2002:", "!!")
        return (
            f"the tag {tag} is not allowed in a config (YAML tags build objects or run code, "
            "and no setting takes one); remove the tag and write the value as plain text"
        )
    return reason if "; " in reason else f"{reason}; write the value as plain text"


def read_yaml(text: str) -> object:
    """Parse one YAML document into plain data, or raise YamlInputError."""
    if len(text.encode("utf-8", errors="surrogatepass")) > MAX_BYTES:
        return decode(text.encode("utf-8", errors="surrogatepass"))  # raises: over the limit
    try:
        loader = _ConfigLoader(text)
    except yaml.reader.ReaderError as exc:
        raise YamlInputError([_reader_problem(text, exc)]) from None
    try:
        data = loader.get_single_data()
    except yaml.reader.ReaderError as exc:
        raise YamlInputError([_reader_problem(text, exc)]) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        reason = printable(getattr(exc, "problem", None) or str(exc).splitlines()[0])
        raise YamlInputError([f"(yaml) {where}: {_with_fix(exc, reason)}"]) from None
    except ValueError:
        # Python refuses to convert integers of more than 4300 digits.
        raise YamlInputError(
            ["(yaml): a number has thousands of digits; no setting takes such a number, shorten it"]
        ) from None
    finally:
        if "loader" in locals():
            loader.dispose()
    if loader.duplicates:
        raise YamlInputError(bounded(loader.duplicates))
    _count_values(data)
    return data

"""Reading values out of CloudFormation templates: property pointers, the logical IDs
and exports a value refers to, and which paths of two values differ."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

Template = dict[str, Any]

IMPORT_PREFIX = "export "
# ${Name} or ${Name.Attribute} inside Fn::Sub; ${!Literal} is an escape, ${AWS::x} a pseudo.
_SUB_REFERENCE = re.compile(r"\$\{(?!!)([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


MISSING = _Missing()


@dataclass(frozen=True)
class Unresolved:
    """An intrinsic function met on the way down a pointer: only equality is known."""

    canonical: str


def is_intrinsic(node: Any) -> bool:
    return (
        isinstance(node, dict) and len(node) == 1 and ("Ref" in node or next(iter(node)).startswith("Fn::"))
    )


def value_at(properties: dict[str, Any], pointer: str) -> Any:
    """The value a `/properties/...` pointer selects; `*` fans out over list items."""
    segments = [s.replace("~1", "/").replace("~0", "~") for s in pointer.split("/")[2:]]
    return _walk(properties, segments)


def _walk(node: Any, segments: list[str]) -> Any:
    if node == {"Ref": "AWS::NoValue"}:
        return MISSING
    if not segments:
        return node
    if is_intrinsic(node):
        return Unresolved(json.dumps(node, sort_keys=True))
    head, rest = segments[0], segments[1:]
    if isinstance(node, list):
        tail = rest if head == "*" else segments
        return tuple(_walk(item, tail) for item in node)
    if isinstance(node, dict) and head in node:
        return _walk(node[head], rest)
    return MISSING


def references(node: Any) -> set[str]:
    """What a value depends on: logical IDs (Ref, Fn::GetAtt, Fn::Sub) and, prefixed with
    IMPORT_PREFIX, the export names it reads through Fn::ImportValue."""
    if isinstance(node, list):
        return set().union(*(references(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    for key, value in node.items():
        if key == "Ref" and isinstance(value, str) and not value.startswith("AWS::"):
            found.add(value)
        elif key == "Fn::GetAtt":
            target = value[0] if isinstance(value, list) else str(value).split(".", 1)[0]
            if isinstance(target, str):
                found.add(target)
        elif key == "Fn::Sub":
            text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])
            found |= {n for n in _SUB_REFERENCE.findall(text) if n not in variables}
            found |= references(variables)
        elif key == "Fn::ImportValue" and isinstance(value, str):
            found.add(IMPORT_PREFIX + value)
        else:
            found |= references(value)
    return found


def attribute_references(node: Any) -> set[tuple[str, str]]:
    """(logical id, attribute) of every Fn::GetAtt in a value."""
    if isinstance(node, list):
        return set().union(*(attribute_references(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[tuple[str, str]] = set()
    for key, value in node.items():
        if key == "Fn::GetAtt":
            parts = value if isinstance(value, list) else str(value).split(".", 1)
            if len(parts) == 2 and all(isinstance(p, str) for p in parts):
                found.add((parts[0], parts[1]))
        else:
            found |= attribute_references(value)
    return found


def changed_paths(before: Any, after: Any, prefix: str) -> list[str]:
    if before == after:
        return []
    if (
        isinstance(before, dict)
        and isinstance(after, dict)
        and not (is_intrinsic(before) or is_intrinsic(after))
    ):
        paths: list[str] = []
        for key in sorted(before.keys() | after.keys()):
            paths += changed_paths(
                before.get(key, MISSING), after.get(key, MISSING), f"{prefix}/{key}" if prefix else key
            )
        return paths
    return [prefix]


def property_name(pointer: str) -> str:
    return pointer.removeprefix("/properties/")

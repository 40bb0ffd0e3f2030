"""Whether an identity policy allows one request, judged by IAM's documented rules for the
condition operators gpucluster's policies use.

moto's evaluator passes a condition whose key the request lacks and knows StringEquals
alone, so an untagged caller would look allowed. Here a missing key fails its condition
(unless the operator ends in IfExists), every key of an operator and every operator of a
statement must hold, a list of values matches any of them, `*` and `?` are wildcards in
Action, Resource and the *Like operators, and `${key}` in a value is the request's key. An
operator outside that set is an error, never a pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_VARIABLE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Request:
    action: str
    resource: str
    # Condition keys the request carries (aws:PrincipalTag/..., ssm:resourceTag/..., aws:userid).
    context: Mapping[str, str] = field(default_factory=dict)


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _wildcard(pattern: str, value: str) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, value, flags=re.DOTALL) is not None


def _substituted(pattern: str, context: Mapping[str, str]) -> str | None:
    """`pattern` with each `${key}` replaced; None when the request lacks a key (IAM then
    matches nothing)."""
    missing = [key for key in _VARIABLE.findall(pattern) if key not in context]
    if missing:
        return None
    return _VARIABLE.sub(lambda found: context[found.group(1)], pattern)


def _holds(operator: str, expected: str | list[str], actual: str | None, context: Mapping[str, str]) -> bool:
    base, if_exists = (
        (operator[: -len("IfExists")], True) if operator.endswith("IfExists") else (operator, False)
    )
    if actual is None:
        return if_exists
    patterns = [p for p in (_substituted(value, context) for value in _listed(expected)) if p is not None]
    if base == "StringEquals":
        return actual in patterns
    if base == "StringLike":
        return any(_wildcard(pattern, actual) for pattern in patterns)
    if base == "Bool":
        return actual.lower() in [pattern.lower() for pattern in patterns]
    raise ValueError(f"condition operator {operator} is not modelled here")


def _statement_allows(statement: Mapping[str, Any], request: Request) -> bool:
    if statement["Effect"] != "Allow":
        raise ValueError("only Allow statements are modelled")
    if not any(_wildcard(action, request.action) for action in _listed(statement["Action"])):
        return False
    if not any(_wildcard(resource, request.resource) for resource in _listed(statement["Resource"])):
        return False
    return all(
        _holds(operator, expected, request.context.get(key), request.context)
        for operator, keys in statement.get("Condition", {}).items()
        for key, expected in keys.items()
    )


def allows(policy: Mapping[str, Any], request: Request) -> bool:
    """Whether any statement of `policy` (a deployed document: no intrinsic functions) allows `request`."""
    return any(_statement_allows(statement, request) for statement in policy["Statement"])

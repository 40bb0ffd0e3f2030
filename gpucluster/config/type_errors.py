"""Wrong-type errors worded for a YAML author: what type the field takes, what type was
given (as YAML would write it), and how to write it instead.

The models are strict (fields.StrictModel), so `count: true`, `count: "2"` and
`efa: "yes"` all end here instead of being converted behind the user's back.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic_core import ErrorDetails

# pydantic's error type -> what the field takes, in YAML's words.
EXPECTED = {
    "int_type": "a whole number",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "text",
    "dict_type": "a mapping of settings",
    "model_type": "a mapping of settings",
    "list_type": "a list",
    "datetime_type": "a date and time like 2026-12-01T11:30:00Z",
}
_NUMBERS = ("int_type", "float_type")
_YAML_BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "y", "n"})
_SHOWN = 40


def given(value: Any) -> str:
    """The type of `value` as a YAML author knows it, with the value when it is short."""
    if value is None:
        return "null (an empty value)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, str):
        shown = value if len(value) <= _SHOWN else value[:_SHOWN] + "..."
        return f"text ('{shown}')"
    if isinstance(value, datetime | date):
        return f"a date ({value.isoformat()})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


# How to write a value of each type, when nothing more telling can be said about the one given.
_HOW = {
    "int_type": "write digits, like 2",
    "float_type": "write a number, like 250",
    "bool_type": "write true or false",
    "string_type": "write it as text (quote it if YAML reads it as something else)",
    "dict_type": "write its settings indented under the key",
    "model_type": "write its settings indented under the key",
    "list_type": "write a list, one '- item' per line",
    "datetime_type": "write the date and time in UTC, as EC2 reports it",
}


def _hint(kind: str, value: Any) -> str:
    if kind in _NUMBERS and isinstance(value, str) and _is_number(value):
        return "; write the number without quotes"
    if kind == "bool_type" and isinstance(value, str) and value.strip().lower() in _YAML_BOOLEANS:
        return "; write true or false without quotes"
    if kind in _NUMBERS and isinstance(value, bool):
        return "; a boolean is not a number, write the number itself"
    return f"; {_HOW[kind]}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def describe_type_error(error: ErrorDetails) -> str | None:
    """`must be X, not Y; how to write it` for a wrong-type error, else None."""
    expected = EXPECTED.get(error["type"])
    if expected is None:
        return None
    value = error.get("input")
    return f"must be {expected}, not {given(value)}{_hint(error['type'], value)}"

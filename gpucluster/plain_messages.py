"""pydantic's validation errors in plain words, each with its fix.

The config loader and the command line (typer checks option values with pydantic)
both come here, so `count: two` in a file and `--count two` read the same way.
"""

from __future__ import annotations

from typing import Any

# pydantic error types (pydantic docs, "Validation Errors") -> what is wrong, how to fix it.
# `{input}` and the error's context values (`{ge}`, `{min_length}`...) are filled in.
_PLAIN: dict[str, tuple[str, str]] = {
    "int_parsing": ("{shown} is not a whole number", "write digits, like 2"),
    "int_type": ("{shown} is not a whole number", "write digits, like 2"),
    "int_from_float": ("{shown} is not a whole number", "drop the fraction"),
    "float_parsing": ("{shown} is not a number", "write a number, like 0.9"),
    "float_type": ("{shown} is not a number", "write a number, like 0.9"),
    "bool_parsing": ("{shown} is not true or false", "write true or false"),
    "bool_type": ("{shown} is not true or false", "write true or false"),
    "string_type": ("{shown} is not text", "write it as text (quote it)"),
    "greater_than_equal": ("must be at least {ge} (it is {input})", "raise it to {ge} or more"),
    "greater_than": ("must be more than {gt} (it is {input})", "raise it above {gt}"),
    "less_than_equal": ("must be at most {le} (it is {input})", "lower it to {le} or less"),
    "less_than": ("must be less than {lt} (it is {input})", "lower it below {lt}"),
    "multiple_of": ("must be a multiple of {multiple_of} (it is {input})", "round it to one"),
    "too_short": (
        "needs at least {min_length} entr{min_plural} (it has {actual_length})",
        "add {min_entries} (see examples/default.yaml)",
    ),
    "too_long": (
        "takes at most {max_length} entr{max_plural} (it has {actual_length})",
        "remove {extra} of them",
    ),
    "string_too_short": ("must be at least {min_length} characters long", "lengthen it"),
    "string_too_long": ("must be at most {max_length} characters long", "shorten it"),
    "list_type": ("must be a list (YAML `- item` lines)", "write it as a list"),
    "dict_type": ("must be a mapping of settings (`key: value` lines)", "write it as a mapping"),
}


def _shown(value: object) -> str:
    """A value as the user wrote it in YAML or on the command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return repr(value) if isinstance(value, str) else str(value)


def _fields(error: Any) -> dict[str, object]:
    ctx = dict(error.get("ctx") or {})
    values: dict[str, object] = {"input": error.get("input"), "shown": _shown(error.get("input")), **ctx}
    for bound in ("min_length", "max_length"):
        if isinstance(ctx.get(bound), int):
            count = int(ctx[bound])
            values[f"{bound[:3]}_plural"] = "y" if count == 1 else "ies"
    if isinstance(ctx.get("min_length"), int):
        values["min_entries"] = "one" if ctx["min_length"] == 1 else f"{ctx['min_length']}"
    if isinstance(ctx.get("max_length"), int) and isinstance(ctx.get("actual_length"), int):
        values["extra"] = int(ctx["actual_length"]) - int(ctx["max_length"])
    return values


def plain(error: Any) -> tuple[str, str] | None:
    """(what is wrong, how to fix it) for one pydantic error (an `ErrorDetails`), or None for
    an error type without plain words here (the caller keeps pydantic's message)."""
    words = _PLAIN.get(str(error.get("type", "")))
    if words is None:
        return None
    values = _fields(error)
    try:
        return words[0].format(**values), words[1].format(**values)
    except (KeyError, IndexError, ValueError):
        return None

"""A command line the parser refused, as one `error gpucluster VERB: --OPTION: what; fix` line.

The same shape as a value a verb refuses (`BadInput.option`): the verb, the option or
argument, what is wrong, and the fix (here: the verb's help).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer

PROG = "gpucluster"


def one_line(text: str) -> str:
    return " ".join(text.split())


def command_path(root: Any, args: Sequence[str]) -> str:
    """`gpucluster VERB [SUB-VERB]` as far as `args` name commands of `root` (a click group)."""
    path = [PROG]
    group = root
    for arg in args:
        commands = getattr(group, "commands", None)
        if arg.startswith("-"):
            continue
        if not commands or arg not in commands:
            break
        path.append(arg)
        group = commands[arg]
    return " ".join(path)


def _param_name(param: Any) -> str | None:
    if param is None:
        return None
    opts = [opt for opt in getattr(param, "opts", []) if opt.startswith("--")]
    if getattr(param, "param_type_name", "") == "option" and opts:
        return str(opts[0])
    return str(param.metavar or (param.name or "").upper())


def _sentence(text: str) -> str:
    """click's message as the middle of our line: one line, no capital, no full stop."""
    text = one_line(text).rstrip(".")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text


def _plain(exc: typer.TyperException) -> tuple[str, str] | None:
    """typer checks option values with pydantic: its first error in plain words, with a fix."""
    from pydantic import ValidationError

    from gpucluster.plain_messages import plain

    cause = exc.__cause__
    if not isinstance(cause, ValidationError) or not cause.errors():
        return None
    return plain(cause.errors()[0])


def _field_what_fix(exc: typer.TyperException) -> tuple[str | None, str, str | None]:
    # The parser's exception classes, by name: typer vendors click and exports few of them.
    kind = type(exc).__name__
    message = _sentence(str(getattr(exc, "message", "")))
    if kind == "NoSuchOption":
        possible = sorted(getattr(exc, "possibilities", None) or ())
        guess = f" (did you mean {' or '.join(possible)}?)" if possible else ""
        return str(getattr(exc, "option_name", "")), f"no such option{guess}", None
    if kind == "BadOptionUsage":
        option = str(getattr(exc, "option_name", ""))
        return option, "needs a value" if "requires an argument" in message else message, None
    if kind == "MissingParameter":
        return _param_name(getattr(exc, "param", None)), "is required", None
    if kind == "BadParameter":
        what, fix = _plain(exc) or (message, None)
        return _param_name(getattr(exc, "param", None)), what, fix
    return None, _sentence(exc.format_message()), None


def usage_line(exc: typer.TyperException, path: str) -> str:
    """The one line of a usage error; `path` is the verb the arguments name (`gpucluster
    synth`), used when the parser stopped before it knew the verb (`synth -o` at the end)."""
    parsed = getattr(getattr(exc, "ctx", None), "command_path", None) or PROG
    path = max(parsed, path, key=len)
    field, what, fix = _field_what_fix(exc)
    where = f"{path}: {field}" if field else path
    return f"error {where}: {what}; {fix or f'see `{path} -h`'}"

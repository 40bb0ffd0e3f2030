"""Runs the `gpucluster` app so that every verb ends the same way.

Exit codes (the user's contract): 0 ok, 1 a check failed (diff, scan, synth's
cdk-nag) or an AWS call failed (`error: aws ...`, one line), 2 bad input or a
usage error, 3 gpucluster itself failed (a bug).
Bad input prints `error FILE: FIELD: what; fix`; a usage error prints one line
`usage error: ...` naming `gpucluster <verb> -h`; no verb prints a traceback
(set GPUCLUSTER_DEBUG=1 to see one for a bug).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from gpucluster.aws.errors import AwsError
from gpucluster.bad_input import EXIT_BAD_INPUT, BadInput, report

EXIT_AWS_FAILED = 1
EXIT_INTERNAL = 3
PROG = "gpucluster"


def _first_line(text: str) -> str:
    return " ".join(text.split())


def usage_line(exc: typer.TyperException, args: Sequence[str] = (), verbs: Sequence[str] = ()) -> str:
    ctx = getattr(exc, "ctx", None)
    path = ctx.command_path if ctx is not None else PROG
    if path == PROG:
        # Some parse errors (`synth -o` without a value) carry no context or the root's:
        # the verb is then the first argument that names one.
        verb = next((arg for arg in args if arg in verbs), None)
        path = f"{PROG} {verb}" if verb else PROG
    message = _first_line(exc.format_message()).rstrip(".")
    return f"usage error: {path}: {message}; see `{path} -h`"


def _is_usage_error(exc: typer.TyperException) -> bool:
    # click's UsageError and its subclasses carry the context of the command they hit.
    return getattr(exc, "exit_code", None) == EXIT_BAD_INPUT and hasattr(exc, "ctx")


class GpuclusterGroup(TyperGroup):
    """The app's click group, run in non-standalone mode so errors come back here."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        # Always `gpucluster`: the name users type, also under test runners and `python -m`.
        code = self._run(args, PROG, complete_var, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def _run(self, args: Sequence[str] | None, prog_name: str, complete_var: str | None, **extra: Any) -> int:
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except BadInput as exc:
            return report(exc)
        except AwsError as exc:
            # The input was fine but AWS refused or failed: not bad input (2), a failure (1).
            print(f"error: aws {exc.line}", file=sys.stderr)
            return EXIT_AWS_FAILED
        except typer.TyperException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                ctx = getattr(exc, "ctx", None)
                print(ctx.get_help() if ctx is not None else "", file=sys.stderr)
                return EXIT_BAD_INPUT
            if _is_usage_error(exc):
                argv = list(sys.argv[1:] if args is None else args)
                print(usage_line(exc, argv, list(self.commands)), file=sys.stderr)
                return EXIT_BAD_INPUT
            print(f"error: {_first_line(exc.format_message())}", file=sys.stderr)
            return int(getattr(exc, "exit_code", 1))
        except typer.Abort:
            print("aborted", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("GPUCLUSTER_DEBUG"):
                traceback.print_exc()
            print(
                f"internal error: {type(exc).__name__}: {_first_line(str(exc))[:500]}; this is a bug "
                "in gpucluster: re-run with GPUCLUSTER_DEBUG=1 for the traceback and report it",
                file=sys.stderr,
            )
            return EXIT_INTERNAL
        return result if isinstance(result, int) else 0


class VerbCommand(TyperCommand):
    """A verb whose help names arguments as the user types them (`CONFIG`, `PATH...`),
    not as Python types (`<path>`, `<list[Path]>`, `{CONFIG}`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            if param.param_type_name == "argument":
                shown = param.metavar or (param.name or "").upper()
                usage = shown if param.required else f"[{shown}]"
                # Instance attributes shadow typer's methods for this parameter only
                # (set through the instance dict: the methods are not meant to be reassigned).
                vars(param).update(
                    display_type_rich=lambda ctx: None,
                    _usage_display_name=lambda usage=usage: usage,
                )

"""Runs the `gpucluster` app so that every verb ends the same way.

Exit codes (the user's contract): 0 ok, 1 a check failed (diff, scan, gate, synth's
cdk-nag) or something outside gpucluster failed (AWS, the AWS login, Node, the disk),
2 bad input (a file, or the command line), 3 gpucluster itself failed (a bug).
Every error is one line, `error SUBJECT: what is wrong; how to fix it`: the subject is
the file (and its field), `gpucluster VERB` (and the option), `aws CALL (REGION)`, or
the directory or tool at fault. No verb prints a traceback (set GPUCLUSTER_DEBUG=1 to
see one for a bug).
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from gpucluster.bad_input import EXIT_BAD_INPUT, BadInput, report
from gpucluster.cli.usage import PROG, command_path, one_line, usage_line
from gpucluster.env_problem import EnvironmentProblem, report_problem

EXIT_INTERNAL = 3


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
        argv = list(sys.argv[1:] if args is None else args)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except BadInput as exc:
            return report(exc, command=command_path(self, argv))
        except EnvironmentProblem as exc:
            # The input was fine but AWS, the machine or a tool refused: a failure (1), not bad input.
            return report_problem(exc)
        except typer.TyperException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                ctx = getattr(exc, "ctx", None)
                print(ctx.get_help() if ctx is not None else "", file=sys.stderr)
                path = command_path(self, argv)
                print(f"error {path}: a verb is required; pick one of the commands above", file=sys.stderr)
                return EXIT_BAD_INPUT
            print(usage_line(exc, command_path(self, argv)), file=sys.stderr)
            return EXIT_BAD_INPUT if _is_usage_error(exc) else int(getattr(exc, "exit_code", 1))
        except typer.Abort:
            # Only the purchase questions ask (buy, extend), and they come before any purchase.
            print(
                f"error {command_path(self, argv)}: aborted at the question, nothing was bought; "
                "answer y, or pass --yes",
                file=sys.stderr,
            )
            return 1
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("GPUCLUSTER_DEBUG"):
                traceback.print_exc()
            print(
                f"error {command_path(self, argv)}: internal error {type(exc).__name__}: "
                f"{one_line(str(exc))[:500]}; this is a bug in gpucluster: re-run with "
                "GPUCLUSTER_DEBUG=1 for the traceback and report it",
                file=sys.stderr,
            )
            return EXIT_INTERNAL
        return result if isinstance(result, int) else 0


class VerbCommand(TyperCommand):
    """A verb whose help names arguments as the user types them (`CONFIG`, `PATH...`),
    not as Python types (`<path>`, `<list[Path]>`, `{CONFIG}`), and whose paths are
    checked by the verb, not by the parser."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for param in self.params:
            info = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
            if getattr(info, "readable", False):
                # Each verb opens its paths itself: one it cannot read is bad input of that
                # file (`error FILE: (file): cannot be read`), not a usage error of the parser.
                info.readable = False  # type: ignore[union-attr]
            if param.param_type_name == "argument":
                shown = param.metavar or (param.name or "").upper()
                usage = shown if param.required else f"[{shown}]"
                # Instance attributes shadow typer's methods for this parameter only
                # (set through the instance dict: the methods are not meant to be reassigned).
                vars(param).update(
                    display_type_rich=lambda ctx: None,
                    _usage_display_name=lambda usage=usage: usage,
                )

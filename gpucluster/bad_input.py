"""Input a user can fix, reported the same way by every verb and by `cdk synth`.

One line per problem, exit 2: `error FILE: FIELD: what is wrong; how to fix it` for a
file the verb reads (the config, a baseline, a log), and
`error gpucluster VERB: --OPTION: what is wrong; how to fix it` for the command line
(an option's value, an unknown option, a missing argument, an output directory).
"""

from __future__ import annotations

import errno
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

from gpucluster.env_problem import EnvironmentProblem

EXIT_BAD_INPUT = 2
# The source of a command-line problem; the command runner prints the verb in its place.
COMMAND_LINE = "(command line)"
# A write that fails for these is the machine's state, not the directory the user chose.
_DISK_TROUBLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})


class BadInput(Exception):
    """Input the user can fix: the file or directory they named, and one line per problem.

    The one error type of every verb, of `cdk synth` and of the config loader; each
    problem reads `FIELD: what is wrong; how to fix it`.
    """

    def __init__(self, source: str | Path, field: str, what: str, fix: str) -> None:
        self._set(source, [f"{field}: {what}; {fix}"])

    @classmethod
    def option(cls, option: str, what: str, fix: str) -> BadInput:
        """A problem of the command line: `option` (`--group`, `CONFIG`) and what is wrong with it."""
        return cls(COMMAND_LINE, option, what, fix)

    @classmethod
    def from_problems(cls, source: str | Path, problems: list[str]) -> BadInput:
        """Several problems already worded `FIELD: what; fix` (the config validator's)."""
        exc = cls.__new__(cls)
        exc._set(source, problems)
        return exc

    def _set(self, source: str | Path, problems: list[str]) -> None:
        super().__init__(f"{source}: " + "; ".join(problems))
        self.source = str(source)
        self.problems = problems


def _printable(text: str) -> str:
    # File names and values come from the user: keep each problem on one line.
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def error_lines(exc: BadInput, command: str | None = None) -> list[str]:
    """`command` (`gpucluster synth`) names the source of a command-line problem."""
    source = command if command and exc.source == COMMAND_LINE else _printable(exc.source)
    return [f"error {source}: {_printable(problem)}" for problem in exc.problems]


def report(exc: BadInput, stream: TextIO | None = None, command: str | None = None) -> int:
    """Print each problem on its own line (stderr by default); returns the exit code."""
    stream = stream or sys.stderr
    for line in error_lines(exc, command):
        print(line, file=stream)
    return EXIT_BAD_INPUT


def output_dir(path: Path, option: str) -> Path:
    """A directory the verb may write into: existing or creatable, not a file, writable.

    Checked before the verb's work starts, so an unwritable directory fails at once
    (with the verb's only output lost to nothing), the same way for every verb."""
    if path.exists() and not path.is_dir():
        raise BadInput.option(
            option,
            f"{path} is a file, not a directory",
            f"pass a directory to {option} (it is created when missing)",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
        # A file that vanishes on close: the one test of writability that root, ACLs and
        # read-only mounts all answer truthfully.
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        # Name the directory, not the scratch file that failed in it.
        raise write_failure(path, option, exc, where=path) from None
    return path


def write_failure(
    path: Path, option: str, exc: OSError, where: str | Path | None = None
) -> BadInput | EnvironmentProblem:
    """A failed write under the directory `path` the user named with `option`: bad input of
    that option, or, for a full disk or an I/O error, a problem of the machine (exit 1).
    The line names `where` (default: the file that failed, else `path`)."""
    where = where or exc.filename or path
    reason = exc.strerror or str(exc)
    if exc.errno in _DISK_TROUBLE:
        return EnvironmentProblem(str(where), f"cannot be written ({reason})", disk_fix(option))
    return BadInput.option(
        option, f"{where} cannot be written ({reason})", f"pass a directory you can write to {option}"
    )


def disk_fix(option: str) -> str:
    """The fix of a full disk under a directory the user chose with `option`."""
    return f"free space on that disk, or point {option} at a directory on another one"


@contextmanager
def writing_into(path: Path, option: str) -> Iterator[None]:
    """Files written under a directory the user named: a failed write names the file."""
    try:
        yield
    except OSError as exc:
        raise write_failure(path, option, exc) from None

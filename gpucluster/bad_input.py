"""Input a user can fix, reported the same way by every verb and by `cdk synth`.

One line per problem: `error FILE: FIELD: what is wrong; how to fix it`, exit 2.
A usage error (unknown option, missing argument) also exits 2 but reads
`usage error: ...` so a user and a CI log can tell the two apart.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO

EXIT_BAD_INPUT = 2


class BadInput(Exception):
    """Input the user can fix: the file or directory they named, and one line per problem.

    The one error type of every verb, of `cdk synth` and of the config loader; each
    problem reads `FIELD: what is wrong; how to fix it`.
    """

    def __init__(self, source: str | Path, field: str, what: str, fix: str) -> None:
        self._set(source, [f"{field}: {what}; {fix}"])

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


def error_lines(exc: BadInput) -> list[str]:
    return [f"error {_printable(exc.source)}: {_printable(problem)}" for problem in exc.problems]


def report(exc: BadInput, stream: TextIO | None = None) -> int:
    """Print each problem on its own line (stderr by default); returns the exit code."""
    stream = stream or sys.stderr
    for line in error_lines(exc):
        print(line, file=stream)
    return EXIT_BAD_INPUT


def output_dir(path: Path, option: str) -> Path:
    """A directory the verb may write into: existing or creatable, not a file."""
    if path.exists() and not path.is_dir():
        raise BadInput(
            path,
            f"({option})",
            "is a file, not a directory",
            f"pass a directory to {option} (it is created when missing)",
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(
            path,
            f"({option})",
            f"cannot be created ({exc.strerror})",
            f"pass a directory you can write to {option}",
        ) from None
    return path


@contextmanager
def writing_into(path: Path, option: str) -> Iterator[None]:
    """Files written under a directory the user named: a failed write is bad input naming the file."""
    try:
        yield
    except OSError as exc:
        raise BadInput(
            exc.filename or path,
            f"({option})",
            f"cannot be written ({exc.strerror})",
            f"pass a directory you can write to {option}",
        ) from None

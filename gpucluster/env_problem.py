"""Something outside gpucluster stopped a verb: AWS, the AWS login, Node, a cache, the disk.

The input was fine, so it is not bad input (exit 2) but a failure (exit 1), reported
like every other error: one line, `error SUBJECT: what went wrong; how to fix it`, where
the subject is what to look at (`aws ec2:CALL (REGION)`, a directory, `node`).
"""

from __future__ import annotations

import sys
from typing import TextIO

EXIT_ENVIRONMENT = 1


class EnvironmentProblem(Exception):
    """One line: the subject, what went wrong there, and the fix."""

    def __init__(self, subject: str, what: str, fix: str) -> None:
        self.subject = subject
        self.what = what
        self.fix = fix
        self.line = f"{subject}: {what}; {fix}"
        super().__init__(self.line)


def report_problem(problem: EnvironmentProblem, stream: TextIO | None = None) -> int:
    """Print the problem's line (stderr by default); returns the exit code."""
    print(f"error {problem.line}", file=stream or sys.stderr)
    return EXIT_ENVIRONMENT

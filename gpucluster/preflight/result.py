"""One row of the preflight table."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpucluster.aws.errors import AwsError

PASS, FAIL, SKIP = "pass", "FAIL", "skip"


@dataclass(frozen=True)
class Result:
    check: str
    status: str  # PASS, FAIL or SKIP
    detail: str
    fix: str = ""


def passed(check: str, detail: str) -> Result:
    return Result(check, PASS, detail)


def failed(check: str, detail: str, fix: str) -> Result:
    return Result(check, FAIL, detail, fix)


def guarded(check: str, run: Callable[[], list[Result]]) -> list[Result]:
    """The check's rows, or one failed row when AWS refused a call it needs."""
    try:
        return run()
    except AwsError as exc:
        return [failed(check, exc.line.split("; ")[0], exc.line.split("; ", 1)[-1])]

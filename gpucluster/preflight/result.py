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


def guarded(check: str, run: Callable[[], list[Result]]) -> tuple[list[Result], AwsError | None]:
    """The check's rows, or one failed row when a call it needs failed, with that failure."""
    try:
        return run(), None
    except AwsError as exc:
        # The same what and fix as the one-line error of every other AWS verb.
        return [failed(check, f"{exc.call}: {exc.what}", exc.fix)], exc

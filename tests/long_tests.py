"""The suite's guard on its own speed: a test whose call takes longer than
`long_test_seconds` (an ini option, 60 s unless set) fails unless it is
marked `@pytest.mark.long("why it cannot be faster")`.

Only the call phase counts: a session fixture's setup (the real-Slurm cluster, each
example's synth) is charged to whichever test needs it first, and is measured by
`make bench-suite` instead."""

from __future__ import annotations

from collections.abc import Generator

import pytest

LIMIT_OPTION = "long_test_seconds"
MARK = "long"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(LIMIT_OPTION, "seconds a test's call may take unless it is marked long", default="60")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARK}(reason): the test may take over {LIMIT_OPTION}, and why")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        mark = item.get_closest_marker(MARK)
        if mark is not None and not (mark.args and str(mark.args[0]).strip()):
            raise pytest.UsageError(f'{item.nodeid}: @pytest.mark.{MARK} needs its reason: {MARK}("why")')


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    limit = float(item.config.getini(LIMIT_OPTION))
    if report.when != "call" or not report.passed or call.duration <= limit:
        return
    if item.get_closest_marker(MARK) is not None:
        return
    report.outcome = "failed"
    report.longrepr = (
        f"{item.nodeid} took {call.duration:.1f} s, over the {limit:g} s a test may take: "
        f'make it faster, or mark it @pytest.mark.{MARK}("why it cannot be faster")'
    )

"""The speed guard (tests/long_tests.py) on a pytest of its own, with a limit of a
fraction of a second."""

from __future__ import annotations

import pytest

from tests.conftest import REPO

TESTS = """
import time
import pytest

def test_quick():
    pass

def test_slow():
    time.sleep(0.5)

@pytest.mark.long("waits for a daemon's timer")
def test_slow_and_marked():
    time.sleep(0.5)

def test_slow_and_failing():
    time.sleep(0.5)
    assert False, "its own failure"
"""


@pytest.fixture
def guarded(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytest run with the guard at 0.3 s; the guard comes from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makeini("[pytest]\nlong_test_seconds = 0.3\n")
    pytester.makeconftest('pytest_plugins = ["tests.long_tests"]\n')
    return pytester


def _run(pytester: pytest.Pytester, tests: str) -> pytest.RunResult:
    pytester.makepyfile(test_speed=tests)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider")


def test_an_unmarked_test_over_the_limit_fails_naming_its_time_and_the_fix(guarded: pytest.Pytester):
    result = _run(guarded, TESTS)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        ["*test_speed.py::test_slow took 0.* s, over the 0.3 s a test may take: make it faster, or mark it*"]
    )
    result.stdout.fnmatch_lines(["*its own failure*"])
    assert "test_slow_and_marked took" not in result.stdout.str()


def test_a_long_mark_without_its_reason_is_a_usage_error(guarded: pytest.Pytester):
    result = _run(guarded, "import pytest\n\n@pytest.mark.long\ndef test_x():\n    pass\n")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(['*test_x: @pytest.mark.long needs its reason: long("why")*'])

"""The jobs' printf formats and the gate's parsers agree, with and without launcher prefixes."""

from __future__ import annotations

import subprocess

import pytest

from gpucluster.job_output import (
    EFA_CHECK_PRINTF,
    NO_PARTNERS,
    NO_SWITCH,
    PAIR_PRINTF,
    EfaCheck,
    PairHeader,
    efa_check_line,
    pair_line,
    parse_efa_check_line,
    parse_pair_line,
)


def _printf(fmt: str, *args: str) -> str:
    return subprocess.run(["printf", fmt, *args], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("prefix", ["", "0: ", "[1,0]<stdout>:"])
def test_pair_line_printed_by_shell_is_read_back(prefix: str) -> None:
    nodes = ("gpu-i-0123456789abcdef0", "gpu-i-0fedcba9876543210")
    printed = _printf(PAIR_PRINTF, "2", *nodes, "nn-leaf-a", NO_SWITCH)
    assert printed == pair_line(2, *nodes, ("nn-leaf-a", NO_SWITCH)) + "\n"
    assert parse_pair_line(prefix + printed) == PairHeader(2, nodes, ("nn-leaf-a", NO_SWITCH))
    # A job rendered before pair lines named switches.
    assert parse_pair_line(prefix + pair_line(2, *nodes) + "\n") == PairHeader(2, nodes)


@pytest.mark.parametrize("partners", [(), ("gpu-i-0b",), ("gpu-i-0b", "gpu-i-0c")])
def test_efa_check_line_printed_by_shell_is_read_back(partners: tuple[str, ...]) -> None:
    printed = _printf(
        EFA_CHECK_PRINTF,
        "gpu-i-0123456789abcdef0",
        "fail",
        "31",
        "32",
        "8",
        ",".join(partners) or NO_PARTNERS,
        "1 EFA device missing",
    )
    check = EfaCheck("gpu-i-0123456789abcdef0", False, 31, 32, 8, "1 EFA device missing", partners)
    assert printed == efa_check_line(check) + "\n"
    assert parse_efa_check_line("3: " + printed) == check


def test_efa_check_line_of_an_older_job_without_pingpong_failed_is_read() -> None:
    line = "gpucluster-efa-check node=gpu-1 result=fail efa=0/32 gpus=8 reason=fi_pingpong with gpu-2 failed"
    assert parse_efa_check_line(line) == EfaCheck("gpu-1", False, 0, 32, 8, "fi_pingpong with gpu-2 failed")


@pytest.mark.parametrize(
    "line",
    [
        "",
        "gpucluster-pair round=x nodes=a,b",
        "gpucluster-pair round=1 nodes=a",
        "gpucluster-efa-check node=a result=maybe efa=1/1 gpus=8 reason=",
        "#  size  count  type  redop  root  time  algbw  busbw",
    ],
)
def test_other_lines_are_not_job_lines(line: str) -> None:
    assert parse_pair_line(line) is None
    assert parse_efa_check_line(line) is None

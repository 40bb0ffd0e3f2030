"""The scontrol commands and times the controller speaks: the reservation it creates, the
head node's local wall clock, and a reservation line as slurmctld 22.05.8 printed it."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from gpucluster.agents import maintenance
from gpucluster.agents.scontrol import parse_records, parse_slurm_time, slurm_time
from tests.agents.fakes import END, GRACE


def test_reservation_command_is_what_the_integration_suite_runs():
    assert maintenance.reservation_command("gpu", END - GRACE, END) == [
        "scontrol",
        "create",
        "reservation",
        "ReservationName=gpu-capacity-block-end",
        "PartitionName=gpu",
        "Nodes=ALL",
        "Flags=MAINT,IGNORE_JOBS,PART_NODES",
        "Users=root",
        f"StartTime={slurm_time(END - GRACE)}",
        f"EndTime={slurm_time(END)}",
    ]
    assert maintenance.anchor_command("gpu") == [
        "scontrol",
        "create",
        "NodeName=gpu-block-anchor",
        "Feature=gpu",
        "State=FUTURE",
    ]


@pytest.fixture
def new_york(monkeypatch):
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_slurm_times_are_the_head_nodes_local_wall_clock(new_york):
    assert slurm_time(END) == "2026-12-24T06:30:00"
    assert parse_slurm_time("2026-12-24T06:30:00") == END
    with pytest.raises(ValueError, match="time zone"):
        slurm_time(datetime(2026, 12, 24, 11, 30))


def test_a_real_reservation_line_parses():
    # Printed by `scontrol -o show reservation` on slurmctld 22.05.8 here.
    record = parse_records(
        "ReservationName=gpu-capacity-block-end StartTime=2026-12-02T12:16:13 "
        "EndTime=2026-12-02T13:16:13 Duration=01:00:00 Nodes=gpu-anchor,gpu-i-0ccccccccccccccc1 "
        "NodeCnt=2 CoreCnt=3 Features=(null) PartitionName=gpu "
        "Flags=MAINT,IGNORE_JOBS,SPEC_NODES,PART_NODES TRES=cpu=3 Users=root Groups=(null) "
        "Accounts=(null) Licenses=(null) State=INACTIVE BurstBuffer=(null) Watts=n/a "
        "MaxStartDelay=(null)\n"
    )
    assert len(record) == 1
    assert record[0]["StartTime"] == "2026-12-02T12:16:13"
    assert record[0]["TRES"] == "cpu=3"
    assert record[0]["State"] == "INACTIVE"

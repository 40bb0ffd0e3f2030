"""The Capacity Block controller: its decision with fake clocks and reservation states,
the Auto Scaling and SSM calls through botocore's Stubber, and the Slurm maintenance
reservation against a fake scontrol that answers as slurmctld 22.05.8 did on this
machine (see gpucluster/agents/maintenance.py). Also: the agents run from a bundle
directory as plain scripts, import nothing beyond the standard library and boto3, and
their systemd units are valid."""

from __future__ import annotations

import argparse
import ast
import configparser
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucluster.agents import capacity_controller as cc
from gpucluster.agents import maintenance, runtime
from gpucluster.agents.compute_groups import GroupDocumentError, parse_group
from gpucluster.agents.scontrol import (
    CommandResult,
    parse_records,
    parse_slurm_time,
    slurm_time,
)
from gpucluster.loader import load_config
from gpucluster.rendering import render

REPO = Path(__file__).resolve().parent.parent
AGENTS = REPO / "gpucluster" / "agents"
UNITS = REPO / "templates" / "systemd"

CLUSTER = "demo"
BLOCK_ID = "cr-01234567890abcdef"
ASG = "demo-cluster-train-asg"
START = datetime(2026, 12, 10, 11, 30, tzinfo=UTC)
END = datetime(2026, 12, 24, 11, 30, tzinfo=UTC)
GRACE = timedelta(minutes=60)
LEAD = timedelta(minutes=35)
EC2_STATES = [
    "active",
    "expired",
    "cancelled",
    "pending",
    "failed",
    "scheduled",
    "payment-pending",
    "payment-failed",
    "assessing",
    "delayed",
    "unsupported",
    "cancelling",
    "unavailable",
]


# --- the decision ------------------------------------------------------------------


def test_deployed_after_the_block_began_runs_the_full_count():
    decision = cc.decide(START + timedelta(days=3), "active", START, END, 8, GRACE)
    assert decision.desired_capacity == 8
    assert decision.maintenance_start == END - GRACE


def test_extended_block_keeps_nodes_past_the_old_end():
    now = END - timedelta(minutes=40)
    assert cc.decide(now, "active", START, END, 8, GRACE).desired_capacity == 8
    # Past the old scale-in point, only the extension keeps the nodes.
    later = END - timedelta(minutes=20)
    assert cc.decide(later, "active", START, END, 8, GRACE).desired_capacity == 0
    extended = cc.decide(later, "active", START, END + timedelta(days=7), 8, GRACE)
    assert extended.desired_capacity == 8
    assert extended.maintenance_start == END + timedelta(days=7) - GRACE


@pytest.mark.parametrize("state", ["expired", "cancelled", "payment-failed", "failed"])
def test_a_dead_block_scales_to_zero_without_maintenance(state):
    decision = cc.decide(START + timedelta(days=1), state, START, END, 8, GRACE)
    assert decision.desired_capacity == 0
    assert decision.maintenance_start is None
    assert state in decision.reason


@pytest.mark.parametrize("state", ["scheduled", "payment-pending"])
def test_an_upcoming_block_has_no_nodes_but_its_maintenance_window(state):
    decision = cc.decide(START - timedelta(days=2), state, START, END, 8, GRACE)
    assert decision.desired_capacity == 0
    assert decision.maintenance_start == END - GRACE


def test_the_clock_crossing_end_minus_35_minutes_scales_in():
    just_before = cc.decide(END - LEAD - timedelta(seconds=1), "active", START, END, 2, GRACE)
    at = cc.decide(END - LEAD, "active", START, END, 2, GRACE)
    assert just_before.desired_capacity == 2
    assert at.desired_capacity == 0
    assert "scale-in" in at.reason


def test_an_expired_block_past_its_end_has_no_window_even_if_ec2_lags():
    decision = cc.decide(END + timedelta(minutes=1), "active", START, END, 2, GRACE)
    assert decision == cc.Decision(0, None, decision.reason)


def test_decide_refuses_naive_times_and_a_grace_shorter_than_the_scale_in_lead():
    with pytest.raises(ValueError, match="time zone"):
        cc.decide(datetime(2026, 12, 12), "active", START, END, 2, GRACE)
    with pytest.raises(ValueError, match="scale-in lead"):
        cc.decide(START, "active", START, END, 2, timedelta(minutes=34))


moments = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
)
graces = st.integers(min_value=35, max_value=24 * 60).map(lambda m: timedelta(minutes=m))


# Seconds from the block's end: anywhere in a long block, and densely around the end.
offsets = st.one_of(
    st.integers(min_value=-200 * 86400, max_value=30 * 86400),
    st.integers(min_value=-2 * 3600, max_value=3600),
)


@settings(max_examples=400, deadline=None)
@given(
    offset=offsets,
    state=st.sampled_from(EC2_STATES),
    start=moments,
    length=st.integers(min_value=1, max_value=182 * 24).map(lambda h: timedelta(hours=h)),
    count=st.integers(min_value=1, max_value=64),
    grace=graces,
)
def test_nodes_run_only_while_active_and_more_than_35_minutes_from_the_end(
    offset, state, start, length, count, grace
):
    end = start + length
    now = end + timedelta(seconds=offset)
    decision = cc.decide(now, state, start, end, count, grace)
    assert decision.desired_capacity in (0, count)
    if decision.desired_capacity > 0:
        assert state == "active"
        assert now < end - LEAD
    if decision.maintenance_start is not None:
        # New starts stop no later than the scale-in, and the window is still ahead or open.
        assert decision.maintenance_start <= end - LEAD
        assert now < end


@settings(max_examples=200, deadline=None)
@given(
    first=moments,
    step=st.integers(min_value=0, max_value=30 * 24 * 60).map(lambda m: timedelta(minutes=m)),
    state=st.sampled_from(EC2_STATES),
    length=st.integers(min_value=1, max_value=182 * 24).map(lambda h: timedelta(hours=h)),
    extension=st.integers(min_value=0, max_value=26 * 7).map(lambda d: timedelta(days=d)),
)
def test_no_flapping_in_time_and_an_extension_never_shrinks_the_group(first, step, state, length, extension):
    end = START + length
    earlier = cc.decide(first, state, START, end, 4, GRACE)
    later = cc.decide(first + step, state, START, end, 4, GRACE)
    assert later.desired_capacity <= earlier.desired_capacity
    extended = cc.decide(first, state, START, end + extension, 4, GRACE)
    assert extended.desired_capacity >= earlier.desired_capacity
    # The same facts give the same decision: a second run has nothing new to do.
    assert cc.decide(first, state, START, end, 4, GRACE) == earlier


# --- a fake scontrol ---------------------------------------------------------------


class FakeSlurm:
    """Answers the scontrol commands the controller issues, as slurmctld 22.05.8 did
    here: a reservation on a partition without nodes is refused, a reservation that
    has begun cannot be moved nor a start moved into the past, FUTURE nodes show only
    with --future."""

    def __init__(self, now: datetime, reservations: dict[str, tuple[datetime, datetime]] | None = None):
        self.now = now
        self.nodes: dict[str, str] = {}  # node name -> partition (its feature)
        self.reservations = dict(reservations or {})
        self.created_with: dict[str, dict[str, str]] = {}
        self.calls: list[list[str]] = []
        self.down = False

    @property
    def mutations(self) -> list[list[str]]:
        return [call for call in self.calls if call[1] in ("create", "update", "delete")]

    def _ok(self, argv, stdout="") -> CommandResult:
        return CommandResult(tuple(argv), 0, stdout, "")

    def _fail(self, argv, stderr) -> CommandResult:
        return CommandResult(tuple(argv), 1, "", stderr)

    def _active(self, name: str) -> bool:
        start, end = self.reservations[name]
        return start <= self.now < end

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        self.calls.append(argv)
        assert argv[0] == "scontrol"
        if self.down:
            return self._fail(argv, "slurm_load_reservations error: Unable to contact slurm controller")
        args = dict(a.split("=", 1) for a in argv if "=" in a)
        match argv[1:]:
            case ["-o", "show", "reservation", name]:
                if name not in self.reservations:
                    return self._fail(argv, f"Reservation {name} not found")
                start, end = self.reservations[name]
                state = "ACTIVE" if self._active(name) else "INACTIVE"
                return self._ok(
                    argv,
                    f"ReservationName={name} StartTime={slurm_time(start)} EndTime={slurm_time(end)} "
                    "Duration=01:00:00 Nodes=train-block-anchor NodeCnt=1 CoreCnt=1 Features=(null) "
                    "PartitionName=train Flags=MAINT,IGNORE_JOBS,SPEC_NODES,PART_NODES TRES=cpu=1 "
                    f"Users=root Groups=(null) Accounts=(null) Licenses=(null) State={state} "
                    "BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n",
                )
            case ["--future", "-o", "show", "node", name]:
                if name not in self.nodes:
                    return self._fail(argv, f"Node {name} not found")
                return self._ok(argv, f"NodeName={name} CPUTot=1 State=FUTURE+DYNAMIC_NORM\n")
            case ["create", node_arg, *_] if node_arg.startswith("NodeName="):
                self.nodes[args["NodeName"]] = args["Feature"]
                return self._ok(argv)
            case ["create", "reservation", *_]:
                name = args["ReservationName"]
                if name in self.reservations:
                    return self._fail(argv, "Error creating the reservation: Duplicate reservation name")
                if args["PartitionName"] not in self.nodes.values():
                    return self._fail(argv, "Error creating the reservation: Invalid node name specified")
                self.reservations[name] = (
                    parse_slurm_time(args["StartTime"]),
                    parse_slurm_time(args["EndTime"]),
                )
                self.created_with[name] = args
                return self._ok(argv, f"Reservation created: {name}\n")
            case ["update", *_]:
                name = args["Reservation"]
                if self._active(name):
                    return self._fail(argv, "Error updating the reservation: Reservation already started")
                if parse_slurm_time(args["StartTime"]) <= self.now:
                    return self._fail(argv, "Error updating the reservation: Invalid time specified")
                self.reservations[name] = (
                    parse_slurm_time(args["StartTime"]),
                    parse_slurm_time(args["EndTime"]),
                )
                return self._ok(argv, "Reservation updated.\n")
            case ["delete", _]:
                del self.reservations[args["Reservation"]]
                return self._ok(argv)
        raise AssertionError(f"the controller issued an unexpected command: {argv}")


# --- the AWS side ------------------------------------------------------------------


class Aws:
    def __init__(self) -> None:
        keys = {
            "region_name": "us-east-2",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        self.clients = cc.Clients(
            ec2=boto3.client("ec2", **keys),
            autoscaling=boto3.client("autoscaling", **keys),
            ssm=boto3.client("ssm", **keys),
        )
        self.ec2 = Stubber(self.clients.ec2)
        self.asg = Stubber(self.clients.autoscaling)
        self.ssm = Stubber(self.clients.ssm)

    def groups(self, *docs: dict) -> None:
        parameters = [
            {
                "Name": f"/gpucluster/{CLUSTER}/compute/{doc['group']}",
                "Value": json.dumps(doc),
                "Type": "String",
            }
            for doc in docs
        ]
        self.ssm.add_response(
            "get_parameters_by_path",
            {"Parameters": parameters},
            {"Path": f"/gpucluster/{CLUSTER}/compute", "Recursive": False},
        )

    def block(self, state: str, start: datetime = START, end: datetime = END) -> None:
        self.ec2.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    {
                        "CapacityReservationId": BLOCK_ID,
                        "InstanceType": "p5.48xlarge",
                        "ReservationType": "capacity-block",
                        "State": state,
                        "StartDate": start,
                        "EndDate": end,
                        "TotalInstanceCount": 2,
                    }
                ]
            },
            {"CapacityReservationIds": [BLOCK_ID]},
        )

    def size(self, min_size: int, max_size: int, desired: int, name: str = ASG) -> None:
        self.asg.add_response(
            "describe_auto_scaling_groups",
            {
                "AutoScalingGroups": [
                    {
                        "AutoScalingGroupName": name,
                        "MinSize": min_size,
                        "MaxSize": max_size,
                        "DesiredCapacity": desired,
                        "DefaultCooldown": 300,
                        "AvailabilityZones": ["us-east-2a"],
                        "HealthCheckType": "EC2",
                        "CreatedTime": START - timedelta(days=30),
                    }
                ]
            },
            {"AutoScalingGroupNames": [name]},
        )

    def expect_set(self, desired: int, name: str = ASG) -> None:
        self.asg.add_response(
            "set_desired_capacity",
            {},
            {"AutoScalingGroupName": name, "DesiredCapacity": desired, "HonorCooldown": False},
        )

    def expect_update(self, min_size: int, max_size: int, desired: int) -> None:
        self.asg.add_response(
            "update_auto_scaling_group",
            {},
            {
                "AutoScalingGroupName": ASG,
                "MinSize": min_size,
                "MaxSize": max_size,
                "DesiredCapacity": desired,
            },
        )

    def run(self, slurm: FakeSlurm, grace: timedelta = GRACE) -> int:
        with self.ec2, self.asg, self.ssm:
            code = cc.run_once(CLUSTER, self.clients, slurm, slurm.now, grace)
            # Every queued response was consumed: no expected call was skipped.
            self.ec2.assert_no_pending_responses()
            self.asg.assert_no_pending_responses()
            self.ssm.assert_no_pending_responses()
        return code


def block_group(count: int = 2) -> dict:
    return {
        "group": "train",
        "asg_name": ASG,
        "count": count,
        "capacity_type": "capacity-block",
        "reservation_id": BLOCK_ID,
        "instance_type": "p5.48xlarge",
    }


RESERVATION = maintenance.reservation_name("train")


@pytest.fixture
def log(caplog):
    caplog.set_level(logging.INFO, logger="capacity-controller")
    return caplog


def test_deployed_late_scales_up_and_reserves_the_end_before_nodes_register(log):
    aws, slurm = Aws(), FakeSlurm(START + timedelta(days=3))
    aws.groups(block_group())
    aws.block("active")
    aws.size(0, 2, 0)
    aws.expect_set(2)
    assert aws.run(slurm) == 0
    assert slurm.nodes == {"train-block-anchor": "train"}
    assert slurm.reservations[RESERVATION] == (END - GRACE, END)
    created = slurm.created_with[RESERVATION]
    assert created["Flags"] == "MAINT,IGNORE_JOBS,PART_NODES"
    assert (created["PartitionName"], created["Nodes"], created["Users"]) == ("train", "ALL", "root")
    line = log.records[-1].getMessage()
    assert line.startswith(f"group=train capacity-block {BLOCK_ID} state=active end=2026-12-24T11:30Z")
    assert "desired 2 (was 0)" in line and "created with placeholder node" in line


def test_a_second_run_changes_nothing(log):
    slurm = FakeSlurm(START + timedelta(days=3))
    first = Aws()
    first.groups(block_group())
    first.block("active")
    first.size(0, 2, 0)
    first.expect_set(2)
    assert first.run(slurm) == 0
    writes = len(slurm.mutations)

    second = Aws()
    second.groups(block_group())
    second.block("active")
    second.size(0, 2, 2)  # no SetDesiredCapacity queued: the Stubber fails on an unexpected call
    slurm.now += timedelta(minutes=1)
    assert second.run(slurm) == 0
    assert len(slurm.mutations) == writes
    assert "desired 2 (unchanged)" in log.records[-1].getMessage()
    assert "unchanged" in log.records[-1].getMessage().split("maintenance", 1)[1]


def test_an_extended_block_moves_the_reservation_that_has_not_begun():
    new_end = END + timedelta(days=7)
    slurm = FakeSlurm(START + timedelta(days=5), {RESERVATION: (END - GRACE, END)})
    slurm.nodes["train-block-anchor"] = "train"
    aws = Aws()
    aws.groups(block_group())
    aws.block("active", end=new_end)
    aws.size(0, 2, 2)
    assert aws.run(slurm) == 0
    assert slurm.reservations[RESERVATION] == (new_end - GRACE, new_end)
    assert [call[1] for call in slurm.mutations] == ["update"]


def test_an_extension_inside_the_window_recreates_the_active_reservation(log):
    new_end = END + timedelta(days=1)
    slurm = FakeSlurm(END - timedelta(minutes=50), {RESERVATION: (END - GRACE, END)})
    slurm.nodes["train-block-anchor"] = "train"
    aws = Aws()
    aws.groups(block_group())
    aws.block("active", end=new_end)
    aws.size(0, 2, 2)
    assert aws.run(slurm) == 0
    assert slurm.reservations[RESERVATION] == (new_end - GRACE, new_end)
    assert [call[1] for call in slurm.mutations] == ["delete", "create"]
    assert "recreated" in log.records[-1].getMessage()


def test_a_longer_grace_that_moves_the_start_into_the_past_recreates_the_reservation():
    longer = timedelta(minutes=90)
    slurm = FakeSlurm(END - timedelta(minutes=75), {RESERVATION: (END - GRACE, END)})
    slurm.nodes["train-block-anchor"] = "train"
    aws = Aws()
    aws.groups(block_group())
    aws.block("active")
    aws.size(0, 2, 2)
    assert aws.run(slurm, grace=longer) == 0
    assert slurm.reservations[RESERVATION] == (END - longer, END)
    assert [call[1] for call in slurm.mutations] == ["delete", "create"]


def test_an_expired_block_scales_to_zero_and_drops_its_reservation():
    slurm = FakeSlurm(END + timedelta(minutes=2), {RESERVATION: (END - GRACE, END + timedelta(hours=1))})
    aws = Aws()
    aws.groups(block_group())
    aws.block("expired")
    aws.size(0, 2, 2)
    aws.expect_set(0)
    assert aws.run(slurm) == 0
    assert RESERVATION not in slurm.reservations


def test_a_failed_payment_leaves_the_group_at_zero_and_reserves_nothing(log):
    slurm = FakeSlurm(START - timedelta(hours=3))
    aws = Aws()
    aws.groups(block_group())
    aws.block("payment-failed")
    aws.size(0, 2, 0)
    assert aws.run(slurm) == 0
    assert slurm.mutations == []
    assert "block is payment-failed" in log.records[-1].getMessage()


def test_the_timer_crossing_end_minus_35_minutes_scales_in_once():
    slurm = FakeSlurm(END - LEAD - timedelta(minutes=1), {RESERVATION: (END - GRACE, END)})
    before = Aws()
    before.groups(block_group())
    before.block("active")
    before.size(0, 2, 2)
    assert before.run(slurm) == 0

    slurm.now = END - LEAD
    after = Aws()
    after.groups(block_group())
    after.block("active")
    after.size(0, 2, 2)
    after.expect_set(0)
    assert after.run(slurm) == 0
    assert slurm.mutations == []  # the window was already right


def test_a_scheduled_block_has_its_reservation_before_the_first_node():
    slurm = FakeSlurm(START - timedelta(days=1))
    aws = Aws()
    aws.groups(block_group())
    aws.block("scheduled")
    aws.size(0, 2, 0)
    assert aws.run(slurm) == 0
    assert slurm.reservations[RESERVATION] == (END - GRACE, END)


def test_bounds_that_do_not_admit_the_size_are_widened_in_one_call():
    slurm = FakeSlurm(START + timedelta(days=1), {RESERVATION: (END - GRACE, END)})
    aws = Aws()
    aws.groups(block_group(count=4))
    aws.block("active")
    aws.size(0, 2, 2)
    aws.expect_update(0, 4, 4)
    assert aws.run(slurm) == 0

    slurm.now = END - timedelta(minutes=10)
    aws = Aws()
    aws.groups(block_group(count=4))
    aws.block("active")
    aws.size(4, 4, 4)  # MinSize raised by hand: the group must still reach 0
    aws.expect_update(0, 4, 0)
    assert aws.run(slurm) == 0


def test_fixed_size_groups_are_left_alone(log):
    slurm = FakeSlurm(START)
    aws = Aws()
    aws.groups(
        {**block_group(), "group": "dev", "capacity_type": "on-demand", "reservation_id": None},
        {**block_group(), "group": "eval", "capacity_type": "odcr", "reservation_id": "cr-0123456789abcdef0"},
    )
    assert aws.run(slurm) == 0  # no EC2 or Auto Scaling call was queued, none was made
    assert slurm.mutations == []
    messages = [record.getMessage() for record in log.records]
    assert any(m.startswith("group=dev on-demand") and "left alone" in m for m in messages)
    assert any(m.startswith("group=eval odcr") and "left alone" in m for m in messages)


def test_an_auto_scaling_failure_does_not_stop_the_reservation(log):
    slurm = FakeSlurm(START + timedelta(days=1))
    aws = Aws()
    aws.groups(block_group())
    aws.block("active")
    aws.size(0, 2, 0)
    aws.asg.add_client_error("set_desired_capacity", "AccessDenied", "not authorized")
    assert aws.run(slurm) == 1
    assert RESERVATION in slurm.reservations
    line = log.records[-1]
    assert line.levelno == logging.ERROR and "NOT SET" in line.getMessage()


def test_a_down_slurmctld_does_not_stop_the_scale_in(log):
    slurm = FakeSlurm(END - timedelta(minutes=30))
    slurm.down = True
    aws = Aws()
    aws.groups(block_group())
    aws.block("active")
    aws.size(0, 2, 2)
    aws.expect_set(0)
    assert aws.run(slurm) == 1
    assert "Unable to contact slurm controller" in log.records[-1].getMessage()


def test_every_group_is_sized_before_slurm_is_asked():
    aws = Aws()
    second = {**block_group(), "group": "train2", "asg_name": "demo-cluster-train2-asg"}
    aws.groups(block_group(), second)
    for name in (ASG, second["asg_name"]):
        aws.block("active")
        aws.size(0, 2, 2, name=name)
        aws.expect_set(0, name=name)

    class SlurmAfterScaling(FakeSlurm):
        def __call__(self, argv):
            # Both SetDesiredCapacity calls were made before the first scontrol command.
            aws.asg.assert_no_pending_responses()
            return super().__call__(argv)

    slurm = SlurmAfterScaling(END - timedelta(minutes=30))
    assert aws.run(slurm) == 0
    assert set(slurm.reservations) == {RESERVATION, maintenance.reservation_name("train2")}


def test_an_unreadable_block_changes_nothing(log):
    slurm = FakeSlurm(START)
    aws = Aws()
    aws.groups(block_group())
    aws.ec2.add_client_error(
        "describe_capacity_reservations",
        "InvalidCapacityReservationId.NotFound",
        f"The capacity reservation ID '{BLOCK_ID}' does not exist",
    )
    assert aws.run(slurm) == 1
    assert slurm.calls == []
    assert "nothing changed" in log.records[-1].getMessage()


def test_a_bad_group_document_is_reported_and_the_others_still_run(log):
    slurm = FakeSlurm(END - timedelta(minutes=20))
    aws = Aws()
    aws.groups({**block_group(), "group": "broken", "count": "two"}, block_group())
    aws.block("active")
    aws.size(0, 2, 2)
    aws.expect_set(0)
    assert aws.run(slurm) == 1
    assert any("field 'count' must be a non-empty int" in r.getMessage() for r in log.records)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"capacity_type": "spot"}, "field 'capacity_type' is 'spot'"),
        ({"reservation_id": None}, "capacity-block needs a 'reservation_id'"),
        ({"reservation_id": "cr-123"}, "field 'reservation_id' must be null or cr-"),
        ({"group": "gpu"}, "last path segment"),
        ({"asg_name": ""}, "field 'asg_name' must be a non-empty str"),
        ({"count": True}, "field 'count' must be a non-empty int"),
        ({"count": 0}, "field 'count' must be at least 1"),
    ],
)
def test_group_documents_are_checked_field_by_field(change, message):
    with pytest.raises(GroupDocumentError, match=message):
        parse_group(f"/gpucluster/{CLUSTER}/compute/train", json.dumps({**block_group(), **change}))


def test_group_documents_tolerate_new_keys():
    group = parse_group(f"/gpucluster/{CLUSTER}/compute/train", json.dumps({**block_group(), "zone": "x"}))
    assert (group.group, group.count, group.is_capacity_block) == ("train", 2, True)


# --- Slurm commands and times ------------------------------------------------------


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


# --- settings ----------------------------------------------------------------------


def _settings(argv: list[str], environ: dict[str, str]) -> runtime.Settings:
    parser = argparse.ArgumentParser()
    runtime.add_common_arguments(parser)
    return runtime.Settings(parser.parse_args(argv), environ)


def test_settings_precedence_is_options_then_env_file_then_environment(tmp_path):
    env_file = tmp_path / "agents.env"
    env_file.write_text('# comment\n\nGPUCLUSTER_CLUSTER="fromfile"\nGPUCLUSTER_REGION=eu-west-1\n')
    environ = {"GPUCLUSTER_CLUSTER": "fromenv", "GPUCLUSTER_REGION": "us-west-2"}
    assert _settings([], environ).cluster() == "fromenv"
    assert _settings(["--env-file", str(env_file)], environ).cluster() == "fromfile"
    assert _settings(["--env-file", str(env_file), "--cluster", "fromcli"], environ).cluster() == "fromcli"
    assert _settings(["--env-file", str(env_file)], environ).region() == "eu-west-1"


def test_settings_errors_name_the_key_and_the_fix(tmp_path):
    with pytest.raises(runtime.SettingError, match="GPUCLUSTER_CLUSTER is not set: pass --cluster"):
        _settings([], {}).cluster()
    with pytest.raises(runtime.SettingError, match="'us-east' is not an AWS region"):
        _settings(["--region", "us-east"], {}).region()
    broken = tmp_path / "broken.env"
    broken.write_text("GPUCLUSTER_CLUSTER\n")
    with pytest.raises(runtime.SettingError, match="line 1: expected KEY=VALUE"):
        _settings(["--env-file", str(broken)], {})


@pytest.mark.parametrize("example", sorted(p.stem for p in (REPO / "examples").glob("*.yaml")))
def test_the_rendered_env_file_configures_both_agents(tmp_path, example):
    cfg = load_config(REPO / "examples" / f"{example}.yaml")
    env_file = tmp_path / "agents.env"
    env_file.write_text(render("systemd/agents.env.j2", cfg=cfg))
    settings_ = _settings(["--env-file", str(env_file)], {})
    assert (settings_.cluster(), settings_.region()) == (cfg.name, cfg.region)


def test_grace_below_the_scale_in_lead_is_refused():
    with pytest.raises(runtime.SettingError, match="at least 35"):
        cc._grace(_settings([], {"GPUCLUSTER_MAINTENANCE_GRACE_MINUTES": "30"}), None)
    assert cc._grace(_settings([], {}), None) == timedelta(minutes=60)
    assert cc._grace(_settings([], {"GPUCLUSTER_MAINTENANCE_GRACE_MINUTES": "90"}), None) == timedelta(
        minutes=90
    )


# --- the bundle: plain scripts, standard library and boto3 only ---------------------


def test_agents_import_only_the_standard_library_boto3_and_each_other():
    siblings = {path.stem for path in AGENTS.glob("*.py")}
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore"} | siblings
    for path in AGENTS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"


def _bundle_copy(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle" / "agents"
    bundle.mkdir(parents=True)
    for path in AGENTS.glob("*.py"):
        shutil.copy(path, bundle / path.name)
    return bundle


def test_the_controller_runs_as_a_script_from_a_bundle_copy(tmp_path):
    bundle = _bundle_copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    help_run = subprocess.run(
        [sys.executable, str(bundle / "capacity_controller.py"), "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert help_run.returncode == 0, help_run.stderr
    assert "--grace-minutes" in help_run.stdout
    unset = subprocess.run(
        [sys.executable, str(bundle / "capacity_controller.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert unset.returncode == 2
    assert "GPUCLUSTER_CLUSTER is not set" in unset.stdout


# --- systemd units -----------------------------------------------------------------


def _unit(name: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read_string((UNITS / name).read_text())
    return parser


def test_the_controller_units_run_the_bundled_script_every_minute():
    service = _unit("gpucluster-capacity-controller.service")
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["EnvironmentFile"] == runtime.ENV_FILE
    assert (
        service["Service"]["ExecStart"]
        == "/usr/bin/python3 /opt/gpucluster/bundle/agents/capacity_controller.py"
    )
    assert "slurmctld.service" in service["Unit"]["After"].split()
    # Ordered after slurmctld but not bound to it: scale-in must happen without Slurm.
    assert "Requires" not in service["Unit"] and "BindsTo" not in service["Unit"]
    timer = _unit("gpucluster-capacity-controller.timer")
    assert timer["Timer"]["OnCalendar"] == "*-*-* *:*:00"
    assert int(service["Service"]["TimeoutStartSec"]) < 60


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    for unit in UNITS.glob("gpucluster-*"):
        shutil.copy(unit, tmp_path / unit.name)
    result = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(p) for p in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        check=False,
    )
    # verify exits 0 on unknown keys and bad values; it only warns, so read the warnings too.
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr

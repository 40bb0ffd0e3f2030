"""One controller run sizes each Capacity Block group's Auto Scaling group from the
block's state and the clock, and leaves fixed-size groups alone. The reservation it keeps
beside the size is in test_maintenance_window.py."""

from __future__ import annotations

from datetime import timedelta

from gpucluster.agents import maintenance
from tests.agents.fakes import (
    ASG,
    BLOCK_ID,
    END,
    GRACE,
    LEAD,
    RESERVATION,
    START,
    Aws,
    FakeSlurm,
    block_group,
)
from tests.agents.scenario import block_aws, slurm_at


def test_deployed_late_scales_up_and_reserves_the_end_before_nodes_register(log):
    slurm = slurm_at(START + timedelta(days=3))
    assert block_aws("active", (0, 2, 0), set_to=2).run(slurm) == 0
    assert slurm.nodes == {"train-block-anchor": "train"}
    assert slurm.reservations[RESERVATION] == (END - GRACE, END)
    created = slurm.created_with[RESERVATION]
    assert created["Flags"] == "MAINT,IGNORE_JOBS,PART_NODES"
    assert (created["PartitionName"], created["Nodes"], created["Users"]) == ("train", "ALL", "root")
    line = log.records[-1].getMessage()
    assert line.startswith(f"group=train capacity-block {BLOCK_ID} state=active end=2026-12-24T11:30Z")
    assert "desired 2 (was 0)" in line and "created with placeholder node" in line


def test_a_second_run_changes_nothing(log):
    slurm = slurm_at(START + timedelta(days=3))
    assert block_aws("active", (0, 2, 0), set_to=2).run(slurm) == 0
    writes = len(slurm.mutations)

    # No SetDesiredCapacity queued: the Stubber fails on an unexpected call.
    second = block_aws("active", (0, 2, 2))
    slurm.now += timedelta(minutes=1)
    assert second.run(slurm) == 0
    assert len(slurm.mutations) == writes
    assert "desired 2 (unchanged)" in log.records[-1].getMessage()
    assert "unchanged" in log.records[-1].getMessage().split("maintenance", 1)[1]


def test_an_expired_block_scales_to_zero_and_drops_its_reservation():
    slurm = slurm_at(END + timedelta(minutes=2), (END - GRACE, END + timedelta(hours=1)))
    assert block_aws("expired", (0, 2, 2), set_to=0).run(slurm) == 0
    assert RESERVATION not in slurm.reservations


def test_a_failed_payment_leaves_the_group_at_zero_and_reserves_nothing(log):
    slurm = slurm_at(START - timedelta(hours=3))
    assert block_aws("payment-failed", (0, 2, 0)).run(slurm) == 0
    assert slurm.mutations == []
    assert "block is payment-failed" in log.records[-1].getMessage()


def test_the_timer_crossing_end_minus_35_minutes_scales_in_once():
    slurm = slurm_at(END - LEAD - timedelta(minutes=1), (END - GRACE, END))
    assert block_aws("active", (0, 2, 2)).run(slurm) == 0

    slurm.now = END - LEAD
    assert block_aws("active", (0, 2, 2), set_to=0).run(slurm) == 0
    assert slurm.mutations == []  # the window was already right


def test_bounds_that_do_not_admit_the_size_are_widened_in_one_call():
    slurm = slurm_at(START + timedelta(days=1), (END - GRACE, END))
    aws = block_aws("active", (0, 2, 2), count=4)
    aws.expect_update(0, 4, 4)
    assert aws.run(slurm) == 0

    slurm.now = END - timedelta(minutes=10)
    aws = block_aws("active", (4, 4, 4), count=4)  # MinSize raised by hand: the group must still reach 0
    aws.expect_update(0, 4, 0)
    assert aws.run(slurm) == 0


def test_fixed_size_groups_are_left_alone(log):
    slurm = slurm_at(START)
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

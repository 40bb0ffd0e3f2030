"""A failure in one part of a run (Auto Scaling, slurmctld, EC2, one group's document)
is logged, makes the run exit 1, and does not stop the parts that can still be done."""

from __future__ import annotations

import logging
from datetime import timedelta

from tests.agents.fakes import BLOCK_ID, END, RESERVATION, START, Aws, block_group
from tests.agents.scenario import block_aws, slurm_at


def test_an_auto_scaling_failure_does_not_stop_the_reservation(log):
    slurm = slurm_at(START + timedelta(days=1))
    aws = block_aws("active", (0, 2, 0))
    aws.asg.add_client_error("set_desired_capacity", "AccessDenied", "not authorized")
    assert aws.run(slurm) == 1
    assert RESERVATION in slurm.reservations
    line = log.records[-1]
    assert line.levelno == logging.ERROR and "NOT SET" in line.getMessage()


def test_a_down_slurmctld_does_not_stop_the_scale_in(log):
    slurm = slurm_at(END - timedelta(minutes=30))
    slurm.down = True
    assert block_aws("active", (0, 2, 2), set_to=0).run(slurm) == 1
    assert "Unable to contact slurm controller" in log.records[-1].getMessage()


def test_an_unreadable_block_changes_nothing(log):
    slurm = slurm_at(START)
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
    slurm = slurm_at(END - timedelta(minutes=20))
    aws = Aws()
    aws.groups({**block_group(), "group": "broken", "count": "two"}, block_group())
    aws.block("active")
    aws.size(0, 2, 2)
    aws.expect_set(0)
    assert aws.run(slurm) == 1
    assert any("field 'count' must be a non-empty int" in r.getMessage() for r in log.records)

"""Scenarios for the controller in one or two lines: slurmctld at a moment, with or
without the group's maintenance window, and AWS answering for the train group's block."""

from __future__ import annotations

from datetime import datetime

from tests.agents.fakes import ANCHOR, END, RESERVATION, Aws, FakeSlurm, block_group


def slurm_at(
    now: datetime, window: tuple[datetime, datetime] | None = None, *, anchored: bool = False
) -> FakeSlurm:
    """slurmctld at `now`; `window` is the train group's maintenance reservation if it
    exists already, `anchored` whether its placeholder node was created."""
    slurm = FakeSlurm(now, {RESERVATION: window} if window else None)
    if anchored:
        slurm.nodes[ANCHOR] = "train"
    return slurm


def block_aws(
    state: str = "active",
    size: tuple[int, int, int] = (0, 2, 0),
    *,
    set_to: int | None = None,
    end: datetime = END,
    count: int = 2,
) -> Aws:
    """AWS for one run over the train group: the block in `state` ending at `end`, the
    Auto Scaling group at (min, max, desired) `size`, and a SetDesiredCapacity to `set_to`
    expected (None: no call allowed)."""
    aws = Aws()
    aws.groups(block_group(count))
    aws.block(state, end=end)
    aws.size(*size)
    if set_to is not None:
        aws.expect_set(set_to)
    return aws

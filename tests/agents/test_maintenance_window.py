"""The Slurm maintenance reservation each Capacity Block group gets before its end: it
exists before the first node, follows an extension, and is recreated where slurmctld
refuses to move it (it has begun, or its new start is in the past)."""

from __future__ import annotations

from datetime import timedelta

from tests.agents.fakes import END, GRACE, RESERVATION, START
from tests.agents.scenario import block_aws, slurm_at


def test_a_scheduled_block_has_its_reservation_before_the_first_node():
    slurm = slurm_at(START - timedelta(days=1))
    assert block_aws("scheduled", (0, 2, 0)).run(slurm) == 0
    assert slurm.reservations[RESERVATION] == (END - GRACE, END)


def test_an_extended_block_moves_the_reservation_that_has_not_begun():
    new_end = END + timedelta(days=7)
    slurm = slurm_at(START + timedelta(days=5), (END - GRACE, END), anchored=True)
    assert block_aws("active", (0, 2, 2), end=new_end).run(slurm) == 0
    assert slurm.reservations[RESERVATION] == (new_end - GRACE, new_end)
    assert [call[1] for call in slurm.mutations] == ["update"]


def test_an_extension_inside_the_window_recreates_the_active_reservation(log):
    new_end = END + timedelta(days=1)
    slurm = slurm_at(END - timedelta(minutes=50), (END - GRACE, END), anchored=True)
    assert block_aws("active", (0, 2, 2), end=new_end).run(slurm) == 0
    assert slurm.reservations[RESERVATION] == (new_end - GRACE, new_end)
    assert [call[1] for call in slurm.mutations] == ["delete", "create"]
    assert "recreated" in log.records[-1].getMessage()


def test_a_longer_grace_that_moves_the_start_into_the_past_recreates_the_reservation():
    longer = timedelta(minutes=90)
    slurm = slurm_at(END - timedelta(minutes=75), (END - GRACE, END), anchored=True)
    assert block_aws("active", (0, 2, 2)).run(slurm, grace=longer) == 0
    assert slurm.reservations[RESERVATION] == (END - longer, END)
    assert [call[1] for call in slurm.mutations] == ["delete", "create"]

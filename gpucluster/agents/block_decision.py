"""What the capacity controller does with a Capacity Block group, decided from the block's
state and dates alone: no AWS call and no clock, so every case is a plain function call.

Why 35 minutes: EC2 starts terminating a block's instances 30 minutes before its end;
AWS advises scaling in before that. The 5 extra minutes cover the timer's one-minute
cadence and the Auto Scaling group's own reaction time.

Why 40 minutes on EKS: a managed node group on a Capacity Block gets a scheduled action from
EKS itself, "Amazon EKS Node Group Capacity Scaledown Before Reservation End", that scales it
to 0 40 minutes before the end (EKS user guide, "Create a managed node group with Capacity
Blocks for ML"). A lead shorter than that would scale the group back up for 5 minutes.

Why a 60-minute grace by default: the maintenance reservation must begin no later than
the scale-in (end - 35 min), or a job could start that the scale-in kills; it begins 25
minutes earlier than that, so jobs that end just before it still have time for their
epilog, a final checkpoint to FSx and the node's own shutdown, and users get the
Capacity Block Expiration Warning (end - 40 min) after new starts have already stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

SCALE_IN_LEAD = timedelta(minutes=35)
EKS_SCALE_IN_LEAD = timedelta(minutes=40)
DEFAULT_GRACE = timedelta(minutes=60)
ACTIVE = "active"
# States in which the block still has an end ahead worth protecting: the maintenance
# reservation exists before the block starts, so it is in place when nodes register.
UPCOMING_OR_ACTIVE = frozenset({"scheduled", "payment-pending", "active"})


@dataclass(frozen=True)
class Decision:
    desired_capacity: int
    maintenance_start: datetime | None
    reason: str


def iso_minute(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def decide(
    now: datetime,
    reservation_state: str,
    start: datetime,
    end: datetime,
    count: int,
    grace: timedelta,
    lead: timedelta = SCALE_IN_LEAD,
) -> Decision:
    """The desired size of a Capacity Block group and where its maintenance window starts.

    `count` while the block is active and now < end - lead; 0 in every other state
    (scheduled, payment-pending, payment-failed, expired, cancelled, ...) and from
    end - lead on (35 minutes on EC2, EKS_SCALE_IN_LEAD on EKS). The maintenance window
    starts at end - grace while the block is upcoming or active and not over; None means no
    reservation should exist.
    """
    for name, moment in (("now", now), ("start", start), ("end", end)):
        if moment.tzinfo is None:
            raise ValueError(f"{name} has no time zone; pass aware datetimes")
    if grace < lead:
        raise ValueError(
            f"grace {grace} is shorter than the scale-in lead {lead}: jobs could start "
            "that the scale-in kills"
        )
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    live = reservation_state in UPCOMING_OR_ACTIVE and now < end
    maintenance_start = end - grace if live else None
    if reservation_state != ACTIVE:
        return Decision(0, maintenance_start, f"block is {reservation_state}, not active")
    scale_in_at = end - lead
    if now >= scale_in_at:
        minutes = int(lead.total_seconds() // 60)
        reason = f"scale-in: block ends {iso_minute(end)}, {minutes} min lead began {iso_minute(scale_in_at)}"
        return Decision(0, maintenance_start, reason)
    reason = f"block active since {iso_minute(start)}, scale-in at {iso_minute(scale_in_at)}"
    return Decision(count, maintenance_start, reason)

"""Capacity Block dates EC2 can actually sell, and whether a block is still usable.

Facts (EC2 user guide, "Find and purchase Capacity Blocks",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-purchase.html):
- durations are bought in 1-day steps up to 14 days, then 7-day steps up to 182 days;
- every block ends at 11:30 UTC, so an offering's real length is "slightly less or
  greater" than the days asked for (it starts whenever the offering starts);
- EC2 starts terminating instances 30 minutes before the end.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

NOW_ENV = "GPUCLUSTER_NOW"
DAY = timedelta(days=1)
MAX_DAYS = 182
# Instances are terminated from 30 minutes before the end: a block ending sooner than
# that cannot run a node, and one that is about to is almost certainly a stale config.
MIN_REMAINING = timedelta(minutes=30)


def valid_days(days: int) -> bool:
    return 1 <= days <= 14 or (14 < days <= MAX_DAYS and days % 7 == 0)


def current_time(now: datetime | None = None) -> datetime:
    """`now` if given, else GPUCLUSTER_NOW (ISO 8601, for tests and reproducible CI), else the clock."""
    if now is not None:
        return now.astimezone(UTC)
    pinned = os.environ.get(NOW_ENV)
    if pinned:
        try:
            value = datetime.fromisoformat(pinned.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f"{NOW_ENV}={pinned!r} is not an ISO 8601 time; use e.g. 2026-12-01T00:00:00Z or unset it"
            ) from None
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.now(UTC)


def duration_problem(start: datetime, end: datetime) -> str | None:
    """None for a length EC2 sells (to the nearest day), else what is wrong."""
    length = end - start
    days = round(length / DAY)
    if valid_days(days):
        return None
    hours = length / timedelta(hours=1)
    return (
        f"the block lasts {hours:.0f} hours ({length / DAY:.1f} days), a length EC2 does not sell: "
        "Capacity Blocks last 1-14 days, or 21-182 days in 7-day steps; copy StartDate and "
        "EndDate from `aws ec2 describe-capacity-reservations`"
    )


def expiry_problem(end: datetime, now: datetime) -> str | None:
    """None while the block has more than 30 minutes left, else what is wrong."""
    left = end - now
    if left > MIN_REMAINING:
        return None
    when = f"ended {_span(-left)} ago" if left <= timedelta(0) else f"ends in {_span(left)}"
    return (
        f"the block {when} (end {end:%Y-%m-%dT%H:%MZ}); EC2 terminates its instances from 30 "
        "minutes before the end, so no node could run. Use a current block's reservation_id, "
        "start and end, or extend this one (PurchaseCapacityBlockExtension)"
    )


def _span(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60)
    if minutes < 120:
        return f"{minutes} minutes"
    if minutes < 2 * 24 * 60:
        return f"{minutes // 60} hours"
    return f"{minutes // (24 * 60)} days"

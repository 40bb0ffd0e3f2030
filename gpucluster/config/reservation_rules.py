"""Groups that name one reservation must agree on what it is: a Capacity Reservation (ODCR or
Capacity Block) holds one instance type, and a Capacity Block one window. Two groups may
split one reservation's instances, never describe it two ways."""

from __future__ import annotations

from collections.abc import Sequence

from gpucluster.config.capacity import CapacityBlockCapacity
from gpucluster.config.nodes import ComputeGroupConfig


def _facts(group: ComputeGroupConfig) -> dict[str, str]:
    facts = {"capacity type": group.capacity.type, "instance type": group.instance_type}
    if isinstance(group.capacity, CapacityBlockCapacity):
        facts["start"] = f"{group.capacity.start:%Y-%m-%dT%H:%MZ}"
        facts["end"] = f"{group.capacity.end:%Y-%m-%dT%H:%MZ}"
    return facts


def shared_reservation_problem(groups: Sequence[ComputeGroupConfig]) -> tuple[str, str] | None:
    """(field, message) for the first group whose reservation an earlier group describes
    otherwise; None when every shared reservation is described alike."""
    first: dict[str, ComputeGroupConfig] = {}
    for index, group in enumerate(groups):
        reservation = getattr(group.capacity, "reservation_id", None)
        if reservation is None:
            continue
        earlier = first.setdefault(reservation, group)
        if earlier is group:
            continue
        mine, theirs = _facts(group), _facts(earlier)
        differs = [
            f"{what} ({mine.get(what, 'none')} here, {theirs.get(what, 'none')} there)"
            for what in theirs | mine
            if mine.get(what) != theirs.get(what)
        ]
        if differs:
            return (
                f"compute_groups.{index}.capacity.reservation_id",
                f"{reservation} is group {earlier.name}'s reservation too, but the two differ in "
                f"{', '.join(differs)}; one reservation holds one instance type for one window: "
                f"copy group {earlier.name}'s capacity and instance_type, or give this group its "
                "own reservation",
            )
    return None

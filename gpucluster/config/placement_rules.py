"""Which compute groups get a placement group, and which kind.

An On-Demand Capacity Reservation created in a cluster placement group serves
instances launched into that group (EC2 user guide, "Capacity Reservations for
cluster placement groups"; CapacityReservation.PlacementGroupArn), so a new group
made by the stack would leave the reservation unused. A reservation made outside
any group is still used by launches into a group ("Placement group rules and
limitations"), but its capacity was not reserved co-located, so a new cluster group
risks insufficient-capacity launches for no gain. ODCR groups therefore name the
reservation's own group or use none. Capacity Block instances are already
co-located; on-demand groups get a new cluster group by default.
"""

from __future__ import annotations

import re

# EC2 placement group names: up to 255 ASCII characters; we allow the printable, space-free ones.
PLACEMENT_GROUP_NAME = re.compile(r"^[A-Za-z0-9._:/+=@-]{1,255}$")


def choice_problem(value: object) -> str | None:
    """None for auto, true, false or a placement group name; else the one message for all."""
    if value == "auto" or isinstance(value, bool):
        return None
    if isinstance(value, str) and PLACEMENT_GROUP_NAME.match(value):
        return None
    return (
        f"{value!r} is not a choice; use auto, true, false, or (ODCR groups) the name of "
        "the existing placement group the reservation was made in"
    )


def group_problem(capacity_type: str, placement_group: str | bool) -> str | None:
    """None when this capacity type may use this placement choice."""
    if capacity_type == "odcr" and placement_group is True:
        return (
            "an ODCR group never gets a new placement group: a reservation serves only "
            "launches into the placement group it was made in; give that group's name, "
            "or auto/false when the reservation has none"
        )
    named = isinstance(placement_group, str) and placement_group != "auto"
    if named and capacity_type != "odcr":
        return (
            f"'{placement_group}' names an existing placement group, which only ODCR "
            "groups take; use auto, true or false"
        )
    return None

"""The capacity controller's AWS calls: a Capacity Block's state and dates from EC2, and a
compute group's size in Auto Scaling, set only when it differs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class BlockStatus:
    state: str
    start: datetime
    end: datetime


class ControllerError(RuntimeError):
    pass


def _the_one(items: list[dict[str, Any]], error: str) -> dict[str, Any]:
    """The single item a describe call by one id returns; anything else is `error`."""
    if len(items) != 1:
        raise ControllerError(error)
    return items[0]


def read_block(ec2: Any, reservation_id: str) -> BlockStatus:
    response = ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    reservations = response.get("CapacityReservations", [])
    found = f"EC2 returned {len(reservations)} reservations for {reservation_id}"
    reservation = _the_one(reservations, found)
    if "StartDate" not in reservation or "EndDate" not in reservation:
        raise ControllerError(
            f"{reservation_id} has no StartDate/EndDate; is it a Capacity Block? "
            "(`aws ec2 describe-capacity-reservations --capacity-reservation-ids "
            f"{reservation_id}`)"
        )
    return BlockStatus(reservation["State"], reservation["StartDate"], reservation["EndDate"])


@dataclass(frozen=True)
class GroupSize:
    min_size: int
    max_size: int
    desired_capacity: int


def read_group_size(autoscaling: Any, asg_name: str) -> GroupSize:
    response = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[asg_name])
    group = _the_one(response.get("AutoScalingGroups", []), f"Auto Scaling group {asg_name} not found")
    return GroupSize(group["MinSize"], group["MaxSize"], group["DesiredCapacity"])


def apply_desired_capacity(autoscaling: Any, asg_name: str, desired: int) -> str:
    """Set the group's desired capacity if it differs; returns what was done.

    SetDesiredCapacity fails outside MinSize..MaxSize. The stack creates the group with
    MinSize 0 and MaxSize count, so a plain SetDesiredCapacity is the normal path; if
    the bounds do not admit the value (MinSize raised by hand, MaxSize below a grown
    count), one UpdateAutoScalingGroup widens them just enough and sets the size
    atomically. MinSize is never raised: a block's group must be able to reach 0.
    """
    current = read_group_size(autoscaling, asg_name)
    if current.desired_capacity == desired:
        return f"desired {desired} (unchanged)"
    if current.min_size <= desired <= current.max_size:
        autoscaling.set_desired_capacity(
            AutoScalingGroupName=asg_name, DesiredCapacity=desired, HonorCooldown=False
        )
        return f"desired {desired} (was {current.desired_capacity})"
    min_size = min(current.min_size, desired)
    max_size = max(current.max_size, desired)
    autoscaling.update_auto_scaling_group(
        AutoScalingGroupName=asg_name, MinSize=min_size, MaxSize=max_size, DesiredCapacity=desired
    )
    return (
        f"desired {desired} (was {current.desired_capacity}; bounds {current.min_size}..."
        f"{current.max_size} widened to {min_size}..{max_size})"
    )

"""Capacity Block controller: run every minute on the head node by a systemd timer.

For every compute group of the cluster (its SSM parameter, cluster_names.compute_group_parameter):

- capacity-block groups: read the block's state and dates from EC2 (never from the
  config: blocks get extended), set the Auto Scaling group's desired capacity to
  `count` while the block is active and more than 35 minutes from its end, 0 otherwise,
  and keep a Slurm maintenance reservation on the group's nodes from end - grace to end.
- on-demand and ODCR groups have a fixed size that the controller leaves alone.

Everything is decided afresh from EC2's answer on every run, so the controller is right
when the cluster is deployed after the block began, when a block is extended, and
after a missed run; a run that changes nothing makes no write call.

Why 35 minutes: EC2 starts terminating a block's instances 30 minutes before its end;
AWS advises scaling in before that. The 5 extra minutes cover the timer's one-minute
cadence and the Auto Scaling group's own reaction time.

Why a 60-minute grace by default: the maintenance reservation must begin no later than
the scale-in (end - 35 min), or a job could start that the scale-in kills; it begins 25
minutes earlier than that, so jobs that end just before it still have time for their
epilog, a final checkpoint to FSx and the node's own shutdown, and users get the
Capacity Block Expiration Warning (end - 40 min) after new starts have already stopped.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

# mypy checks the package layout; the bundle's flat layout imports the same modules.
if TYPE_CHECKING or __package__:
    from . import runtime
    from .cluster_names import compute_groups_path
    from .compute_groups import ComputeGroup, load_groups
    from .maintenance import MaintenanceWindow, ensure_maintenance
    from .scontrol import Runner, ScontrolError, run_command
else:  # run from the bundle's agents/ directory, where the sibling modules are top-level
    import runtime
    from cluster_names import compute_groups_path
    from compute_groups import ComputeGroup, load_groups
    from maintenance import MaintenanceWindow, ensure_maintenance
    from scontrol import Runner, ScontrolError, run_command

LOG = logging.getLogger("capacity-controller")

SCALE_IN_LEAD = timedelta(minutes=35)
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


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


def decide(
    now: datetime,
    reservation_state: str,
    start: datetime,
    end: datetime,
    count: int,
    grace: timedelta,
) -> Decision:
    """The desired size of a Capacity Block group and where its maintenance window starts.

    `count` while the block is active and now < end - 35 min; 0 in every other state
    (scheduled, payment-pending, payment-failed, expired, cancelled, ...) and from
    end - 35 min on. The maintenance window starts at end - grace while the block is
    upcoming or active and not over; None means no reservation should exist.
    """
    for name, moment in (("now", now), ("start", start), ("end", end)):
        if moment.tzinfo is None:
            raise ValueError(f"{name} has no time zone; pass aware datetimes")
    if grace < SCALE_IN_LEAD:
        raise ValueError(
            f"grace {grace} is shorter than the scale-in lead {SCALE_IN_LEAD}: jobs could start "
            "that the scale-in kills"
        )
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    live = reservation_state in UPCOMING_OR_ACTIVE and now < end
    maintenance_start = end - grace if live else None
    if reservation_state != ACTIVE:
        return Decision(0, maintenance_start, f"block is {reservation_state}, not active")
    scale_in_at = end - SCALE_IN_LEAD
    if now >= scale_in_at:
        return Decision(
            0, maintenance_start, f"scale-in: block ends {_iso(end)}, 35 min lead began {_iso(scale_in_at)}"
        )
    return Decision(
        count, maintenance_start, f"block active since {_iso(start)}, scale-in at {_iso(scale_in_at)}"
    )


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


@dataclass(frozen=True)
class Clients:
    ec2: Any
    autoscaling: Any
    ssm: Any


AWS_ERRORS = (BotoCoreError, ClientError, ControllerError)


@dataclass
class BlockGroupRun:
    """One capacity-block group's pass, filled in by `scale` and then `reserve`."""

    group: ComputeGroup
    block: BlockStatus
    decision: Decision
    capacity: str = ""
    maintenance: str = ""
    ok: bool = True

    @property
    def window(self) -> MaintenanceWindow | None:
        if self.decision.maintenance_start is None:
            return None
        return MaintenanceWindow(self.decision.maintenance_start, self.block.end)


def scale(group: ComputeGroup, clients: Clients, now: datetime, grace: timedelta) -> BlockGroupRun | None:
    """Read the block, decide and set the group's size; None if the block could not be read."""
    assert group.reservation_id is not None  # checked when the SSM document was parsed
    try:
        block = read_block(clients.ec2, group.reservation_id)
    except AWS_ERRORS as err:
        LOG.error(
            "group=%s capacity-block %s: cannot read the block from EC2, nothing changed: %s",
            group.group,
            group.reservation_id,
            err,
        )
        return None
    result = BlockGroupRun(group, block, decide(now, block.state, block.start, block.end, group.count, grace))
    try:
        result.capacity = apply_desired_capacity(
            clients.autoscaling, group.asg_name, result.decision.desired_capacity
        )
    except AWS_ERRORS as err:
        result.capacity = f"desired {result.decision.desired_capacity} NOT SET ({err})"
        result.ok = False
    return result


def reserve(result: BlockGroupRun, run: Runner, now: datetime) -> None:
    try:
        result.maintenance = ensure_maintenance(run, result.group.group, result.window, now)
    except ScontrolError as err:
        result.maintenance = f"NOT SET ({err})"
        result.ok = False


def report(result: BlockGroupRun) -> None:
    window = result.window
    (LOG.info if result.ok else LOG.error)(
        "group=%s capacity-block %s state=%s end=%s asg=%s: %s; maintenance %s %s; %s",
        result.group.group,
        result.group.reservation_id,
        result.block.state,
        _iso(result.block.end),
        result.group.asg_name,
        result.capacity,
        f"{_iso(window.start)}..{_iso(window.end)}" if window else "none",
        result.maintenance,
        result.decision.reason,
    )


def control_fixed_group(group: ComputeGroup, run: Runner, now: datetime) -> bool:
    """On-demand/ODCR groups keep the size the stack gave them; only a maintenance
    reservation left from a time the group was a Capacity Block is removed."""
    try:
        maintenance = ensure_maintenance(run, group.group, None, now)
    except ScontrolError as err:
        LOG.error(
            "group=%s %s: cannot check the maintenance reservation: %s", group.group, group.capacity_type, err
        )
        return False
    leftover = "; removed a leftover maintenance reservation" if maintenance == "deleted" else ""
    LOG.info(
        "group=%s %s asg=%s: fixed size, capacity left alone%s",
        group.group,
        group.capacity_type,
        group.asg_name,
        leftover,
    )
    return True


def run_once(cluster: str, clients: Clients, run: Runner, now: datetime, grace: timedelta) -> int:
    """One pass over every group; the exit code is 1 if anything failed."""
    try:
        documents = load_groups(clients.ssm, cluster)
    except (BotoCoreError, ClientError) as err:
        LOG.error("cannot read the compute groups of %s from SSM: %s", cluster, err)
        return 1
    for problem in documents.problems:
        LOG.error("%s", problem)
    if not documents.groups and not documents.problems:
        LOG.error(
            "no compute group parameters under %s; is the cluster name right?",
            compute_groups_path(cluster),
        )
        return 1
    ok = not documents.problems
    # Every group is sized before Slurm is touched, so a slow or hung slurmctld cannot
    # delay any group's scale-in past the point EC2 reclaims its block.
    blocks = []
    for group in documents.groups:
        if group.is_capacity_block:
            result = scale(group, clients, now, grace)
            if result is None:
                ok = False
            else:
                blocks.append(result)
    for result in blocks:
        reserve(result, run, now)
        report(result)
        ok &= result.ok
    for group in documents.groups:
        if not group.is_capacity_block:
            ok &= control_fixed_group(group, run, now)
    return 0 if ok else 1


def _grace(settings: runtime.Settings, cli_minutes: int | None) -> timedelta:
    raw = settings.get(
        "GPUCLUSTER_MAINTENANCE_GRACE_MINUTES", None if cli_minutes is None else str(cli_minutes)
    )
    if raw is None:
        return DEFAULT_GRACE
    try:
        minutes = int(raw)
    except ValueError as err:
        raise runtime.SettingError(
            f"GPUCLUSTER_MAINTENANCE_GRACE_MINUTES '{raw}' is not a whole number of minutes"
        ) from err
    grace = timedelta(minutes=minutes)
    if grace < SCALE_IN_LEAD:
        raise runtime.SettingError(
            f"GPUCLUSTER_MAINTENANCE_GRACE_MINUTES is {minutes}; it must be at least "
            f"{SCALE_IN_LEAD.seconds // 60} so no job starts that the scale-in would kill"
        )
    return grace


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runtime.add_common_arguments(parser)
    parser.add_argument(
        "--grace-minutes",
        type=int,
        help="maintenance reservation length before the block ends "
        "(default: $GPUCLUSTER_MAINTENANCE_GRACE_MINUTES or 60; at least 35)",
    )
    args = parser.parse_args(argv)
    runtime.configure_logging(args.verbose)
    try:
        settings = runtime.Settings(args, os.environ)
        cluster, region = settings.cluster(), settings.region()
        grace = _grace(settings, args.grace_minutes)
    except runtime.SettingError as err:
        LOG.error("%s", err)
        return 2
    clients = Clients(
        ec2=runtime.client("ec2", region),
        autoscaling=runtime.client("autoscaling", region),
        ssm=runtime.client("ssm", region),
    )
    return run_once(cluster, clients, run_command, datetime.now(UTC), grace)


if __name__ == "__main__":
    sys.exit(main())

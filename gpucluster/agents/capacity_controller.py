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

The decision itself is block_decision.decide; the AWS calls are in capacity_aws.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import emf, runtime
from gpucluster.agents import metric_names as m
from gpucluster.agents.block_decision import DEFAULT_GRACE, SCALE_IN_LEAD, Decision, decide, iso_minute
from gpucluster.agents.capacity_aws import BlockStatus, ControllerError, apply_desired_capacity, read_block
from gpucluster.agents.cluster_names import compute_groups_path
from gpucluster.agents.compute_groups import ComputeGroup, load_groups
from gpucluster.agents.maintenance import MaintenanceWindow, ensure_maintenance
from gpucluster.agents.scontrol import Runner, ScontrolError, run_command

LOG = logging.getLogger("capacity-controller")


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
        iso_minute(result.block.end),
        result.group.asg_name,
        result.capacity,
        f"{iso_minute(window.start)}..{iso_minute(window.end)}" if window else "none",
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


def block_records(cluster: str, blocks: Sequence[BlockGroupRun], now: datetime) -> list[str]:
    """Minutes left of each active block, for the dashboard and the block-ending alarm."""
    return [
        emf.record(
            m.namespace(cluster),
            {m.GROUP: result.group.group},
            [(m.CAPACITY_BLOCK_MINUTES_LEFT, max(0.0, round((result.block.end - now).total_seconds() / 60)))],
            now,
        )
        for result in blocks
        if result.block.state == "active"
    ]


def run_once(
    cluster: str,
    clients: Clients,
    run: Runner,
    now: datetime,
    grace: timedelta,
    metrics_dir: str | None = None,
) -> int:
    """One pass over every group; the exit code is 1 if anything failed. With `metrics_dir`,
    each active block's minutes left are written there for the CloudWatch agent."""
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
    lines = block_records(cluster, blocks, now)
    if metrics_dir is not None and lines:
        try:
            emf.append(lines, now, metrics_dir)
        except OSError as err:  # the metrics are worth less than this pass's exit status
            LOG.warning("cannot write the blocks' metrics to %s: %s", metrics_dir, err)
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
    return run_once(cluster, clients, run_command, datetime.now(UTC), grace, emf.METRICS_LOG_DIR)


if __name__ == "__main__":
    sys.exit(main())

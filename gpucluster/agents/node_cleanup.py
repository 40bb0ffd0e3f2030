"""Stale dynamic node cleanup: run every 5 minutes on the head node by a systemd timer.

Compute nodes register as dynamic Slurm nodes named after their group and instance
(cluster_names.COMPUTE_NODE_NAME_FORMAT, for example `gpu-i-0123456789abcdef0`).
When Auto Scaling replaces an instance or a Capacity Block ends, the old node record
stays DOWN forever and counts against MaxNodeCount. A node is deleted
(`scontrol delete nodename=...`) only when both hold:

- Slurm sees it as DOWN, NOT_RESPONDING or FUTURE (slurmctld itself lets an idle,
  responding node be deleted, so this check is the agent's, not Slurm's);
- EC2 says its instance is shutting-down or terminated, or does not know it.

A node whose instance is running, stopped or anything else is never deleted, and
nothing is deleted when EC2 cannot be asked. Slurm refuses to delete a node that has
jobs or sits inside an active reservation (the Capacity Block maintenance window);
such a node is retried on the next run.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import runtime
from gpucluster.agents.cluster_names import COMPUTE_NODE_NAME
from gpucluster.agents.scontrol import Runner, ScontrolError, checked, parse_records, run_command

LOG = logging.getLogger("node-cleanup")

STALE_STATES = frozenset({"DOWN", "NOT_RESPONDING", "FUTURE"})
GONE_INSTANCE_STATES = frozenset({"shutting-down", "terminated"})
# DescribeInstances takes at most 200 values per filter.
INSTANCE_BATCH = 200


@dataclass(frozen=True)
class SlurmNode:
    name: str
    instance_id: str
    states: frozenset[str]

    @property
    def stale(self) -> bool:
        return bool(self.states & STALE_STATES)


def parse_nodes(text: str) -> list[SlurmNode]:
    """Instance-named nodes from `scontrol --future -o show nodes`; every other node
    (static nodes, the maintenance placeholder) is not this agent's business."""
    nodes = []
    for record in parse_records(text):
        name = record.get("NodeName", "")
        match = COMPUTE_NODE_NAME.match(name)
        if not match:
            continue
        # e.g. State=DOWN+DYNAMIC_NORM+NOT_RESPONDING
        states = frozenset(record.get("State", "").split("+"))
        nodes.append(SlurmNode(name, match.group("instance_id"), states))
    return nodes


def list_nodes(run: Runner) -> list[SlurmNode]:
    # FUTURE nodes are hidden without --future.
    return parse_nodes(checked(run(["scontrol", "--future", "-o", "show", "nodes"])).stdout)


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def instance_states(ec2: Any, instance_ids: Sequence[str]) -> dict[str, str]:
    """State name of each instance EC2 knows. A filter, unlike InstanceIds, does not fail
    the whole call when one id is unknown; unknown ids are simply absent from the result."""
    states: dict[str, str] = {}
    paginator = ec2.get_paginator("describe_instances")
    for batch in _batches(sorted(set(instance_ids)), INSTANCE_BATCH):
        pages = paginator.paginate(Filters=[{"Name": "instance-id", "Values": list(batch)}])
        for page in pages:
            for reservation in page["Reservations"]:
                for instance in reservation["Instances"]:
                    states[instance["InstanceId"]] = instance["State"]["Name"]
    return states


@dataclass(frozen=True)
class Verdict:
    node: SlurmNode
    delete: bool
    why: str
    # A dead slurmd on a live instance: not this agent's to fix, worth a warning.
    attention: bool = False


def judge(node: SlurmNode, instance_state: str | None) -> Verdict:
    gone = instance_state is None or instance_state in GONE_INSTANCE_STATES
    ec2_says = "unknown to EC2" if instance_state is None else f"instance {instance_state}"
    slurm_says = "+".join(sorted(node.states))
    if gone and node.stale:
        return Verdict(node, True, f"{ec2_says}, Slurm {slurm_says}")
    if gone:
        return Verdict(node, False, f"{ec2_says} but Slurm still {slurm_says}; waiting for DOWN")
    if node.stale:
        return Verdict(node, False, f"Slurm {slurm_says} but {ec2_says}; kept", attention=True)
    return Verdict(node, False, f"healthy ({ec2_says}, Slurm {slurm_says})")


def delete_command(node: SlurmNode) -> list[str]:
    return ["scontrol", "delete", f"nodename={node.name}"]


def run_once(ec2: Any, run: Runner) -> int:
    try:
        nodes = list_nodes(run)
    except ScontrolError as err:
        LOG.error("cannot list Slurm nodes, nothing deleted: %s", err)
        return 1
    if not nodes:
        LOG.info("no dynamic compute nodes registered")
        return 0
    try:
        states = instance_states(ec2, [node.instance_id for node in nodes])
    except (BotoCoreError, ClientError) as err:
        LOG.error("cannot ask EC2 about %d instances, nothing deleted: %s", len(nodes), err)
        return 1
    verdicts = [judge(node, states.get(node.instance_id)) for node in nodes]
    deleted, refused = 0, 0
    for verdict in verdicts:
        if not verdict.delete:
            (LOG.warning if verdict.attention else LOG.debug)("node %s: %s", verdict.node.name, verdict.why)
            continue
        result = run(delete_command(verdict.node))
        if result.returncode == 0:
            deleted += 1
            LOG.info("node %s deleted: %s", verdict.node.name, verdict.why)
        else:
            refused += 1
            # "Requested nodes are busy": jobs still on it, or inside an active reservation.
            LOG.warning(
                "node %s not deleted (%s), retrying next run: %s",
                verdict.node.name,
                verdict.why,
                result.output,
            )
    LOG.info(
        "nodes=%d deleted=%d refused-by-slurm=%d kept=%d",
        len(nodes),
        deleted,
        refused,
        len(nodes) - deleted - refused,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runtime.add_common_arguments(parser, cluster=False)
    args = parser.parse_args(argv)
    runtime.configure_logging(args.verbose)
    try:
        region = runtime.Settings(args, os.environ).region()
    except runtime.SettingError as err:
        LOG.error("%s", err)
        return 2
    return run_once(runtime.client("ec2", region), run_command)


if __name__ == "__main__":
    sys.exit(main())

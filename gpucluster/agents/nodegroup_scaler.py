"""Capacity Block node groups on EKS: a Lambda function that an EventBridge schedule runs every
minute sizes each one by the EC2 path's decision (block_decision.decide).

There is no head node on EKS, so nothing else would follow the block. Each run reads every
block's state and dates from EC2 (blocks get extended; their dates are not in the function's
settings) and sets the managed node group's desired size through eks:UpdateNodegroupConfig:
`count` while the block is active and more than 40 minutes from its end, 0 otherwise. EKS
drains a node's pods itself before the node group's Auto Scaling group terminates it, and its
own scheduled action scales the group to 0 at end - 40 min as well, so the lead is 40 minutes
here (block_decision.EKS_SCALE_IN_LEAD). A run that changes nothing makes no write call.

Settings (the function's environment, written by the EKS stack):

    GPUCLUSTER_CLUSTER=<the EKS cluster's name>
    GPUCLUSTER_BLOCK_GROUPS=[{"group": "h100", "nodegroup": "<cluster>-h100", "count": 2,
                              "reservation_id": "cr-..."}, ...]
"""

from __future__ import annotations

import logging
import os
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import runtime
from gpucluster.agents.block_decision import DEFAULT_GRACE, EKS_SCALE_IN_LEAD, decide, iso_minute
from gpucluster.agents.capacity_aws import ControllerError, read_block
from gpucluster.agents.cluster_names import CLUSTER_SETTING
from gpucluster.agents.nodegroup_settings import GROUPS_SETTING, BlockNodeGroup, parse_groups

LOG = logging.getLogger("nodegroup-scaler")
AWS_ERRORS = (BotoCoreError, ClientError, ControllerError)


def apply_nodegroup_size(eks: Any, cluster: str, nodegroup: str, desired: int) -> str:
    """Set the node group's desired size if it differs; returns what was done.

    The stack creates the group with minSize 0 and maxSize count, so only desiredSize is
    sent; bounds that do not admit the value (changed by hand) are widened in the same call.
    minSize is never raised: a block's group must be able to reach 0.
    """
    found = eks.describe_nodegroup(clusterName=cluster, nodegroupName=nodegroup)["nodegroup"]["scalingConfig"]
    current, low, high = found["desiredSize"], found["minSize"], found["maxSize"]
    if current == desired:
        return f"desired {desired} (unchanged)"
    config = {"desiredSize": desired}
    if low > desired:
        config["minSize"] = desired
    if high < desired:
        config["maxSize"] = desired
    eks.update_nodegroup_config(clusterName=cluster, nodegroupName=nodegroup, scalingConfig=config)
    widened = f"; bounds {low}..{high} widened" if len(config) > 1 else ""
    return f"desired {desired} (was {current}{widened})"


def scale_group(ec2: Any, eks: Any, cluster: str, group: BlockNodeGroup, now: datetime) -> bool:
    """One group's pass, logged on one line; False if the block or the node group could not be
    read or set (the next run tries again)."""
    try:
        block = read_block(ec2, group.reservation_id)
    except AWS_ERRORS as err:
        LOG.error(
            "group=%s capacity-block %s: cannot read the block, nothing changed: %s",
            group.group,
            group.reservation_id,
            err,
        )
        return False
    decision = decide(now, block.state, block.start, block.end, group.count, DEFAULT_GRACE, EKS_SCALE_IN_LEAD)
    try:
        done = apply_nodegroup_size(eks, cluster, group.nodegroup, decision.desired_capacity)
        ok = True
    except AWS_ERRORS as err:
        done, ok = f"desired {decision.desired_capacity} NOT SET ({err})", False
    (LOG.info if ok else LOG.error)(
        "group=%s capacity-block %s state=%s end=%s nodegroup=%s: %s; %s",
        group.group,
        group.reservation_id,
        block.state,
        iso_minute(block.end),
        group.nodegroup,
        done,
        decision.reason,
    )
    return ok


def run_once(ec2: Any, eks: Any, cluster: str, groups: list[BlockNodeGroup], now: datetime) -> int:
    """Every group, each on its own (one failure stops no other group's scale-in); the number
    that failed."""
    return sum(not scale_group(ec2, eks, cluster, group, now) for group in groups)


def handler(event: object, context: object) -> dict[str, int]:
    """The Lambda entry point. A run with a failed group raises, so it counts in the function's
    Errors metric; every other group was still sized."""
    logging.getLogger().setLevel(logging.INFO)
    cluster = os.environ[CLUSTER_SETTING]
    groups = parse_groups(os.environ[GROUPS_SETTING])
    region = os.environ["AWS_REGION"]
    failed = run_once(
        runtime.client("ec2", region), runtime.client("eks", region), cluster, groups, datetime.now(UTC)
    )
    if failed:
        raise RuntimeError(
            f"{failed} of {len(groups)} Capacity Block node groups not sized; see the log above"
        )
    return {"groups": len(groups)}

"""Capacity Block node groups follow their block on EKS: a Lambda function
(gpucluster/agents/nodegroup_scaler.py, the EC2 controller's decision) that an EventBridge
schedule runs every minute.

Not Auto Scaling scheduled actions at the block's dates: a block's dates are read from EC2 at
run time because blocks get extended, and a scheduled action whose start has passed fails
the deploy (the EC2 path's reason too, gpucluster/infra/constructs/compute_fleet.py).

The function may describe and resize only this cluster's Capacity Block node groups (their
ARNs), read Capacity Reservations (an EC2 Describe call takes no resource ARN) and write its
own log group. Its package is the six agent modules it runs (PACKAGE), nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from gpucluster.agents.cluster_names import CLUSTER_SETTING
from gpucluster.agents.nodegroup_settings import (
    GROUPS_SETTING,
    HANDLER,
    PACKAGE,
    BlockNodeGroup,
    groups_setting,
)
from gpucluster.infra.constructs.compute_fleet import CAPACITY_BLOCK
from gpucluster.infra.constructs.nag import acknowledge
from gpucluster.resolved.groups import ResolvedGroup

AGENTS = Path(__file__).resolve().parents[2] / "agents"
# The newest Python runtime Lambda offers (Lambda developer guide, "Building Lambda functions
# with Python"); it includes boto3, the package's only dependency.
RUNTIME = lambda_.Runtime.PYTHON_3_14
SCHEDULE = cdk.Duration.minutes(1)
# A run makes two or three calls per group, each bounded by the agents' client timeouts;
# under the schedule's minute, so runs never overlap.
TIMEOUT = cdk.Duration.seconds(50)
LOG_RETENTION = logs.RetentionDays.THREE_MONTHS


@dataclass(frozen=True)
class BlockScalerProps:
    cluster_name: str
    # Each Capacity Block group and its managed node group.
    groups: Sequence[tuple[BlockNodeGroup, eks.Nodegroup]]
    tags: Mapping[str, str]


class BlockScaler(Construct):
    function: lambda_.Function

    def __init__(self, scope: Construct, id: str, props: BlockScalerProps) -> None:
        super().__init__(scope, id)
        log_group = logs.LogGroup(
            self, "Log", retention=LOG_RETENTION, removal_policy=cdk.RemovalPolicy.DESTROY
        )
        role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"gpucluster {props.cluster_name}: size Capacity Block node groups to their blocks",
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="ReadCapacityBlocks",
                actions=["ec2:DescribeCapacityReservations"],
                resources=["*"],
            )
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="SizeBlockNodeGroups",
                actions=["eks:DescribeNodegroup", "eks:UpdateNodegroupConfig"],
                resources=[node_group.nodegroup_arn for _, node_group in props.groups],
            )
        )
        log_group.grant_write(role)
        acknowledge(
            role,
            "IAM5",
            "ec2:DescribeCapacityReservations accepts no resource ARN (an EC2 Describe call); the "
            "node group and log writes name their resources",
            findings=("Resource::*",),
        )
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=RUNTIME,
            handler=HANDLER,
            code=lambda_.Code.from_asset(str(AGENTS), exclude=["*", *(f"!{name}" for name in PACKAGE)]),
            role=role,
            timeout=TIMEOUT,
            memory_size=256,
            log_group=log_group,
            environment={
                CLUSTER_SETTING: props.cluster_name,
                GROUPS_SETTING: groups_setting([group for group, _ in props.groups]),
            },
            description=f"gpucluster {props.cluster_name}: Capacity Block node groups follow their blocks",
        )
        # aws-cdk-lib writes a DependsOn on the role beside the GetAtt that already orders them
        # (cfn-lint W3005), as on the kubectl provider's functions (kubectl.py).
        cast(cdk.CfnResource, self.function.node.default_child).add_metadata(
            "cfn-lint", {"config": {"ignore_checks": ["W3005"]}}
        )
        events.Rule(
            self,
            "Schedule",
            schedule=events.Schedule.rate(SCHEDULE),
            description=f"gpucluster {props.cluster_name}: run the Capacity Block node-group scaler",
            # A missed run is simply the next minute's: no retry of a stale one.
            targets=[targets.LambdaFunction(self.function, retry_attempts=0)],
        )
        for key, value in props.tags.items():
            cdk.Tags.of(self).add(key, value)


def _name(node_group: eks.Nodegroup) -> str:
    """The node group's own name. Nodegroup.nodegroup_name is the resource's Ref, which
    CloudFormation answers with "<cluster>/<node group>" (aws-cdk issue 22442)."""
    return cast(eks.CfnNodegroup, node_group.node.default_child).attr_nodegroup_name


def add_block_scaler(
    scope: Construct,
    cluster: eks.ICluster,
    groups: Sequence[tuple[ResolvedGroup, eks.Nodegroup]],
    tags: Mapping[str, str],
) -> BlockScaler | None:
    """The scaler for the Capacity Block groups among `groups`; None when there is none."""
    blocks = [
        (
            BlockNodeGroup(group.name, _name(node_group), group.config.count, group.reservation_id),
            node_group,
        )
        for group, node_group in groups
        if group.config.capacity.type == CAPACITY_BLOCK and group.reservation_id is not None
    ]
    if not blocks:
        return None
    return BlockScaler(scope, "BlockScaler", BlockScalerProps(cluster.cluster_name, blocks, tags))

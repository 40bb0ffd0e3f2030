"""Capacity Block node groups follow their block on EKS: a Lambda function
(gpucluster/agents/nodegroup_scaler.py, the EC2 controller's decision) that an EventBridge
schedule runs every minute.

Not Auto Scaling scheduled actions at the block's dates: a block's dates are read from EC2 at
run time because blocks get extended, and a scheduled action whose start has passed fails
the deploy (the EC2 path's reason too, constructs_lib/compute_fleet.py).

The function may describe and resize only this cluster's Capacity Block node groups (their
ARNs), read Capacity Reservations (an EC2 Describe call takes no resource ARN) and write its
own log group. Its package is the agent modules the scaler imports, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from gpucluster.agents.cluster_names import CLUSTER_SETTING
from gpucluster.agents.nodegroup_settings import (
    GROUPS_SETTING,
    HANDLER,
    BlockNodeGroup,
    groups_setting,
)
from gpucluster.constructs_lib.eks.agent_function import agent_function, agent_role
from gpucluster.constructs_lib.nag import acknowledge


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
        role, log_group = agent_role(
            self, f"gpucluster {props.cluster_name}: size Capacity Block node groups to their blocks"
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
        acknowledge(
            role,
            "IAM5",
            "ec2:DescribeCapacityReservations accepts no resource ARN (an EC2 Describe call); the "
            "node group and log writes name their resources",
            findings=("Resource::*",),
        )
        self.function = agent_function(
            self,
            role=role,
            log_group=log_group,
            handler=HANDLER,
            environment={
                CLUSTER_SETTING: props.cluster_name,
                GROUPS_SETTING: groups_setting([group for group, _ in props.groups]),
            },
            description=f"gpucluster {props.cluster_name}: Capacity Block node groups follow their blocks",
            schedule_description=f"gpucluster {props.cluster_name}: run the Capacity Block node-group scaler",
        )
        for key, value in props.tags.items():
            cdk.Tags.of(self).add(key, value)

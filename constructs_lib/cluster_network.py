"""The cluster's VPC and its one subnet for nodes, created or imported.

EFA traffic and Capacity Blocks are single-AZ, so every node, file system and
mount target sits in one private subnet of `availability_zone`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class ClusterNetworkProps:
    cfg: ClusterConfig


class ClusterNetwork(Construct):
    vpc_id: str
    subnet_id: str
    created_subnet: ec2.CfnSubnet | None

    def __init__(self, scope: Construct, id: str, props: ClusterNetworkProps) -> None:
        super().__init__(scope, id)
        network = props.cfg.network
        if network.vpc_id is not None and network.subnet_id is not None:
            self.vpc_id = network.vpc_id
            self.subnet_id = network.subnet_id
            self.created_subnet = None
            return
        vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(str(network.cidr)),
            availability_zones=[props.cfg.availability_zone],
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=network.cidr.prefixlen + 6
                ),
                ec2.SubnetConfiguration(
                    name="nodes",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=network.cidr.prefixlen + 1,
                ),
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
            },
            restrict_default_security_group=False,
        )
        flow_log_group = logs.LogGroup(
            self,
            "FlowLogs",
            retention=logs.RetentionDays.ONE_MONTH,
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )
        self.vpc_id = vpc.vpc_id
        node_subnet = vpc.private_subnets[0]
        self.subnet_id = node_subnet.subnet_id
        # A Subnet's default child is its CfnSubnet; jsii types it as any IConstruct.
        self.created_subnet = cast(ec2.CfnSubnet, node_subnet.node.default_child)

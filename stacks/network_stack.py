"""Network: the VPC (or imported ids), the node subnet and the security groups."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cluster_network import ClusterNetwork, ClusterNetworkProps
from gpucluster.constructs_lib.cluster_security_groups import (
    ClusterSecurityGroups,
    ClusterSecurityGroupsProps,
)
from gpucluster.resolved import ResolvedCluster


class NetworkStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, *, resolved: ResolvedCluster, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        network = resolved.network
        self.network = ClusterNetwork(
            self,
            "Network",
            ClusterNetworkProps(
                availability_zone=network.availability_zone,
                existing_vpc_id=network.existing_vpc_id,
                existing_subnet_id=network.existing_subnet_id,
                cidr=network.cidr,
                public_subnet=network.public_subnet,
                node_subnet=network.node_subnet,
                database_subnets=network.database_subnets,
            ),
        )
        fsx = resolved.fsx_lustre
        database = resolved.accounting.database if resolved.accounting is not None else None
        self.security_groups = ClusterSecurityGroups(
            self,
            "SecurityGroups",
            ClusterSecurityGroupsProps(
                cluster=resolved.name,
                vpc_id=self.network.vpc_id,
                efa_lustre=fsx is not None and fsx.efa,
                database_port=database.port if database is not None else None,
                rest_api_port=resolved.rest_api.port if resolved.rest_api is not None else None,
                rest_api_cidrs=resolved.rest_api.allow_cidrs if resolved.rest_api is not None else (),
                rest_api_security_groups=resolved.rest_api.allow_security_groups
                if resolved.rest_api is not None
                else (),
            ),
        )
        # FSx for Lustre takes its subnet and security group from here; a new
        # logical ID for either would replace the file system, so they are pinned.
        groups = self.security_groups
        groups.storage.override_logical_id("StorageSecurityGroup")
        groups.nodes.override_logical_id("NodesSecurityGroup")
        groups.efa.override_logical_id("EfaSecurityGroup")
        if self.network.created_subnet is not None:
            self.network.created_subnet.override_logical_id("NodeSubnet")
        # The database's subnet group and security group hold it in place the same way.
        groups.head.override_logical_id("HeadSecurityGroup")
        self.head_security_group_id: str = groups.head.att("GroupId")
        self.database_security_group_id: str | None = None
        if groups.database is not None:
            groups.database.override_logical_id("DatabaseSecurityGroup")
            self.database_security_group_id = groups.database.att("GroupId")
        for index, subnet in enumerate(self.network.database_subnets, start=1):
            subnet.override_logical_id(f"DatabaseSubnet{index}")
        # The database's two subnets: those created here, else those accounting.database lists.
        listed = database.existing_subnet_ids if database is not None else None
        self.database_subnet_ids: tuple[str, ...] = listed or tuple(
            subnet.ref_token for subnet in self.network.database_subnets
        )

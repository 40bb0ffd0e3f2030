"""Network: the VPC (or imported ids), the node subnet and the security groups."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.infra.constructs.cluster_network import ClusterNetwork, ClusterNetworkProps
from gpucluster.infra.constructs.cluster_security_groups import (
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
            ),
        )
        fsx = resolved.config.storage.fsx_lustre
        self.security_groups = ClusterSecurityGroups(
            self,
            "SecurityGroups",
            ClusterSecurityGroupsProps(
                cluster=resolved.name,
                vpc_id=self.network.vpc_id,
                efa_lustre=fsx is not None and fsx.efa,
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

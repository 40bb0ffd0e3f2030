"""Network: the VPC (or imported ids), the node subnet and the security groups."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.config import ClusterConfig
from gpucluster.infra.constructs.cluster_network import ClusterNetwork, ClusterNetworkProps
from gpucluster.infra.constructs.cluster_security_groups import (
    ClusterSecurityGroups,
    ClusterSecurityGroupsProps,
)


class NetworkStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, *, cfg: ClusterConfig, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        self.network = ClusterNetwork(self, "Network", ClusterNetworkProps(cfg=cfg))
        self.security_groups = ClusterSecurityGroups(
            self,
            "SecurityGroups",
            ClusterSecurityGroupsProps(cfg=cfg, vpc_id=self.network.vpc_id),
        )
        # FSx for Lustre takes its subnet and security group from here; a new
        # logical ID for either would replace the file system, so they are pinned.
        groups = self.security_groups
        groups.storage.override_logical_id("StorageSecurityGroup")
        groups.nodes.override_logical_id("NodesSecurityGroup")
        groups.efa.override_logical_id("EfaSecurityGroup")
        if self.network.created_subnet is not None:
            self.network.created_subnet.override_logical_id("NodeSubnet")

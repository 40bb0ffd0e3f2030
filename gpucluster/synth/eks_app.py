"""Where the app adds the EKS stack (orchestrator eks) in place of the Cluster stack."""

from __future__ import annotations

import aws_cdk as cdk

from gpucluster.resolved import ResolvedCluster
from gpucluster.stacks.eks_software import install_cluster_software
from gpucluster.stacks.eks_stack import EksStack, eks_stack_name
from gpucluster.stacks.network_stack import NetworkStack


def add_eks_stack(
    app: cdk.App,
    resolved: ResolvedCluster,
    network: NetworkStack,
    storage: cdk.Stack,
    *,
    env: cdk.Environment,
    description: str,
) -> EksStack:
    """The EKS stack on the Network stack's VPC, with what runs in the cluster
    (cluster_software); it waits for the Storage stack, whose file systems its pods mount."""
    stack = EksStack(
        app,
        eks_stack_name(resolved),
        resolved=resolved,
        vpc_id=network.network.vpc_id,
        subnet_id=network.network.subnet_id,
        control_plane_subnet_ids=[subnet.ref_token for subnet in network.network.database_subnets],
        nodes_security_group_id=network.security_groups.nodes.att("GroupId"),
        efa_security_group_id=network.security_groups.efa.att("GroupId"),
        with_kubectl=True,
        env=env,
        description=f"{description}: EKS cluster and node groups",
    )
    stack.add_stack_dependency(storage, "pods mount the file systems")
    install_cluster_software(stack, resolved)
    return stack

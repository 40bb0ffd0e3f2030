"""Where the app adds the EKS stack (orchestrator eks) in place of the Cluster stack."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import aws_cdk as cdk

from gpucluster.infra.eks.eks_stack import EksStack, HelmRelease, eks_stack_name
from gpucluster.infra.stacks.network_stack import NetworkStack
from gpucluster.resolved import ResolvedCluster


def add_eks_stack(
    app: cdk.App,
    resolved: ResolvedCluster,
    network: NetworkStack,
    storage: cdk.Stack,
    *,
    env: cdk.Environment,
    description: str,
    releases: Callable[[EksStack], Sequence[HelmRelease]] | None = None,
) -> EksStack:
    """The EKS stack on the Network stack's VPC; it waits for the Storage stack, whose file
    systems its pods mount. `releases`, given the built stack (its fsx_facts, node groups),
    returns the Helm charts CDK installs, in order."""
    stack = EksStack(
        app,
        eks_stack_name(resolved),
        resolved=resolved,
        vpc_id=network.network.vpc_id,
        subnet_id=network.network.subnet_id,
        control_plane_subnet_ids=[subnet.ref_token for subnet in network.network.database_subnets],
        nodes_security_group_id=network.security_groups.nodes.att("GroupId"),
        efa_security_group_id=network.security_groups.efa.att("GroupId"),
        with_kubectl=releases is not None,
        env=env,
        description=f"{description}: EKS cluster and node groups",
    )
    stack.add_stack_dependency(storage, "pods mount the file systems")
    for release in releases(stack) if releases is not None else ():
        stack.add_helm_release(release)
    return stack

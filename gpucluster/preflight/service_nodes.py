"""The instances a cluster runs besides its compute groups, by orchestrator: on EC2 the head
node and the login nodes; on EKS no head and no login instances (slurmctld and the login
pods run on the system node group), only that group's nodes."""

from __future__ import annotations

from gpucluster.config import ClusterConfig
from gpucluster.config.orchestrator import EKS
from gpucluster.eks_nodes import SYSTEM_INSTANCE_TYPE, SYSTEM_NODE_COUNT


def service_nodes(cfg: ClusterConfig) -> list[tuple[str, str, int]]:
    """(who, instance type, count) of each non-compute node role, for the quota and the
    instance-type checks."""
    if cfg.orchestrator == EKS:
        return [("system", SYSTEM_INSTANCE_TYPE, SYSTEM_NODE_COUNT)]
    nodes = [("head", cfg.head_node.instance_type, 1)]
    if cfg.login_nodes.count:
        nodes.append(("login", cfg.login_nodes.instance_type, cfg.login_nodes.count))
    return nodes

"""`resolve`: the one place a validated config becomes a `ResolvedCluster`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpucluster import names
from gpucluster.config import (
    ClusterConfig,
    FsxLustreConfig,
    HeadNodeConfig,
    HealthConfig,
    ImageConfig,
    LoginNodesConfig,
    ValidationConfig,
)
from gpucluster.config.ecr import parse_repository
from gpucluster.config.monitoring import MonitoringConfig
from gpucluster.config.orchestrator import Orchestrator
from gpucluster.resolved.accounting import ResolvedAccounting, resolve_accounting
from gpucluster.resolved.groups import ResolvedGroup, resolve_group
from gpucluster.resolved.names import ClusterNames, cluster_names
from gpucluster.resolved.network import ResolvedNetwork, resolve_network
from gpucluster.resolved.node_layout import NODE_LAYOUT, NodeLayout
from gpucluster.resolved.rest_api import ResolvedRestApi, resolve_rest_api
from gpucluster.resolved.slurm import SlurmRelease, resolve_slurm
from gpucluster.resolved.software import ResolvedSoftware, resolve_software
from gpucluster.resolved.users import ResolvedUser, resolve_users


@dataclass(frozen=True)
class ResolvedCluster:
    # The config's sections that the renderers read whole (image, service nodes, fsx_lustre,
    # health, validation, monitoring) travel as their validated models; every other value is
    # resolved into a field of its own. Nothing here is the whole ClusterConfig.
    name: str
    region: str
    # None: the deploying credentials' account (the stacks' env leaves it to the CDK CLI).
    account: str | None
    orchestrator: Orchestrator
    names: ClusterNames
    image: ImageConfig
    head_node: HeadNodeConfig
    login_nodes: LoginNodesConfig
    # The compute groups in the config's order.
    groups: tuple[ResolvedGroup, ...]
    # storage.fsx_lustre; None: the cluster has no FSx for Lustre file system.
    fsx_lustre: FsxLustreConfig | None
    slurm: SlurmRelease
    software: ResolvedSoftware
    network: ResolvedNetwork
    health: HealthConfig
    validation: ValidationConfig
    monitoring: MonitoringConfig
    # What every resource is tagged with: the user's tags and the cluster's name.
    tags: Mapping[str, str]
    # The ECR repositories login and compute nodes may pull from, as sorted ARNs; None: every
    # repository of the cluster's account in its region (software.ecr_repositories unset).
    ecr_repository_arns: tuple[str, ...] | None
    # Slurm accounting; None when `accounting` is off.
    accounting: ResolvedAccounting | None
    # slurmrestd with JWT on the head; None when `rest_api` is off.
    rest_api: ResolvedRestApi | None = None
    # The people every node creates, in the config's order.
    users: tuple[ResolvedUser, ...] = ()
    # Every path gpucluster owns on a node.
    node: NodeLayout = NODE_LAYOUT

    def group(self, name: str) -> ResolvedGroup:
        for group in self.groups:
            if group.name == name:
                return group
        raise KeyError(f"cluster {self.name} has no compute group {name!r}")


def resolve(cfg: ClusterConfig) -> ResolvedCluster:
    return ResolvedCluster(
        name=cfg.name,
        region=cfg.region,
        account=cfg.account,
        orchestrator=cfg.orchestrator,
        names=cluster_names(cfg),
        image=cfg.image,
        head_node=cfg.head_node,
        login_nodes=cfg.login_nodes,
        groups=tuple(resolve_group(cfg, group) for group in cfg.compute_groups),
        fsx_lustre=cfg.storage.fsx_lustre,
        slurm=resolve_slurm(cfg),
        software=resolve_software(cfg),
        network=resolve_network(cfg),
        health=cfg.health,
        validation=cfg.validation,
        monitoring=cfg.monitoring,
        tags=MappingProxyType({**cfg.tags, names.CLUSTER_TAG: cfg.name}),
        ecr_repository_arns=_ecr_repository_arns(cfg),
        accounting=resolve_accounting(cfg),
        rest_api=resolve_rest_api(cfg),
        users=resolve_users(cfg),
    )


def _ecr_repository_arns(cfg: ClusterConfig) -> tuple[str, ...] | None:
    listed = cfg.software.ecr_repositories
    if listed is None:
        return None
    return tuple(sorted({parse_repository(entry).arn for entry in listed}))

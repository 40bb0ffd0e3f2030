"""The cluster after validation: the config plus every decision derived from it, made once
by `resolve`. Both renderers (the node files and the infrastructure) read this object
instead of deriving names, layouts or releases from the config themselves."""

from gpucluster.resolved.accounting import ResolvedAccounting, ResolvedDatabase
from gpucluster.resolved.cluster import ResolvedCluster, resolve
from gpucluster.resolved.groups import ResolvedGroup
from gpucluster.resolved.names import ClusterNames
from gpucluster.resolved.network import ResolvedNetwork
from gpucluster.resolved.rest_api import ResolvedRestApi
from gpucluster.resolved.slurm import SlurmRelease

__all__ = [
    "ClusterNames",
    "ResolvedAccounting",
    "ResolvedCluster",
    "ResolvedDatabase",
    "ResolvedGroup",
    "ResolvedNetwork",
    "ResolvedRestApi",
    "SlurmRelease",
    "resolve",
]

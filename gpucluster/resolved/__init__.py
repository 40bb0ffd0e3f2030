"""The cluster after validation: every value and every decision derived from the config, made
once by `resolve`. Both renderers (the node files and the infrastructure) read this object,
never the config: it holds no ClusterConfig to fall back on (tests/resolved/test_no_config.py)."""

from gpucluster.resolved.accounting import ResolvedAccounting, ResolvedDatabase
from gpucluster.resolved.cluster import ResolvedCluster, resolve
from gpucluster.resolved.groups import ResolvedGroup
from gpucluster.resolved.names import ClusterNames
from gpucluster.resolved.network import ResolvedNetwork
from gpucluster.resolved.rest_api import ResolvedRestApi
from gpucluster.resolved.slurm import SlurmRelease
from gpucluster.resolved.software import ResolvedSoftware

__all__ = [
    "ClusterNames",
    "ResolvedAccounting",
    "ResolvedCluster",
    "ResolvedDatabase",
    "ResolvedGroup",
    "ResolvedNetwork",
    "ResolvedRestApi",
    "ResolvedSoftware",
    "SlurmRelease",
    "resolve",
]

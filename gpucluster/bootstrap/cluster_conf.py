"""conf/cluster.sh: every value the bundle's shell reads, rendered from the resolved cluster.

The values travel in a few typed groups (how the node boots, its packages, its container
runtime, its storage, Slurm, which files each role installs); the cluster's names and node
paths come from the ResolvedCluster, never derived again here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpucluster import names
from gpucluster.bootstrap import (
    boot_budget,
    ecr_login,
    lustre_client,
    metadata_guard,
    node_logs,
    ssh_adoption,
)
from gpucluster.bootstrap.accounting import accounting_boot
from gpucluster.bootstrap.container_runtime import (
    COMPUTE_ENROOT,
    ENROOT_DEPENDENCIES,
    ENROOT_HOOKS,
    LOGIN_ENROOT,
    NVME_MOUNT,
    EnrootDownloads,
    EnrootPaths,
    PyxisDownload,
    enroot_downloads,
    pyxis_download,
)
from gpucluster.bootstrap.lustre_client import LustreRepository
from gpucluster.bootstrap.packages import (
    BASE_PACKAGES,
    BUILD_PACKAGES,
    COMPUTE_TOOLS,
    DISTRIBUTION_SLURM_PACKAGES,
    HEAD_PACKAGES,
    KERNEL_HOLD_PACKAGES,
    NODE_TOOLS,
    UNATTENDED_BLACKLIST,
)
from gpucluster.bootstrap.people import people_boot
from gpucluster.bootstrap.rest_api import rest_api_boot
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm import health_probes
from gpucluster.slurm.build import NodeBuild
from gpucluster.slurm.conf import SlurmSite
from gpucluster.slurm.node_conf import TOPOLOGY_ROOT_UNIT, registration_topology

# slurm.conf keys that `scontrol reconfigure` cannot apply: the head's update restarts
# slurmctld instead (jobs are kept; state is on EFS). Slurm 22.05.8 was seen to exit on a
# reconfigure that changed MaxNodeCount ("fatal: MaxNodeCount has changed (5->12) during
# reconfig, slurmctld must be restarted"), and MaxNodeCount follows every group's count;
# scontrol(1) names the ports, hosts, auth, plugin directory and state location.
SLURMCTLD_RESTART_KEYS = (
    "MaxNodeCount",
    "AuthType",
    "AuthAltTypes",
    "CredType",
    "ControlMachine",
    "SlurmctldHost",
    "SlurmctldPort",
    "SlurmdPort",
    "StateSaveLocation",
    "PluginDir",
    "SelectType",
    "SelectTypeParameters",
    "SwitchType",
    "ProctrackType",
    "GresTypes",
    # "The topology plugin can not be changed via reconfiguration" (Slurm 25.11,
    # src/interfaces/topology.c): a cluster that predates topology/tree restarts into it.
    "TopologyPlugin",
)
# slurmctld starts only while it holds a lock in StateSaveLocation on EFS, so two heads
# (CloudFormation starts a replacement before it deletes the old one) never write one
# state. A dead head's lock goes when the EFS server drops its NFSv4 lease; a live one
# stops within this wait because CloudFormation deletes it after the new one is created.
SLURMCTLD_LOCK_WAIT_SECONDS = boot_budget.shell_values()["SLURMCTLD_LOCK_WAIT"]
# The head's bootstrap waits for the lock and then for slurmctld to read its state.
SLURMCTLD_START_TIMEOUT_SECONDS = boot_budget.shell_values()["SLURMCTLD_START_TIMEOUT"]
# flock's exit status when the wait ran out, so the journal says which way it failed.
SLURMCTLD_LOCK_BUSY_EXIT = 75

# FSx for Lustre guide, "Configuring EFA clients": 8 EFA interfaces on p5/p5e/p5en/p6-b200
# (16 on p6-b300), 2 on other multi-card instances, 1 on single-card ones; each counts
# against the file system's 1024 EFA connections.
LUSTRE_EFA_LARGE = 8
LUSTRE_EFA_BY_TYPE = {"p6-b300.48xlarge": 16}


@dataclass(frozen=True)
class Boot:
    """How the bootstrap runs: its waits, log, failure tag and lifecycle hook."""

    # Every wait and retry count (gpucluster.bootstrap.boot_budget); the scripts use these names.
    waits: Mapping[str, int]
    bootstrap_log: str
    failure_tag: str
    lifecycle_hook: str
    # compute_node_name's body: the one node-name format with the shell's $1 and $2.
    compute_node_name: str
    cw_agent_ctl: str
    cw_agent: node_logs.AgentDownload


@dataclass(frozen=True)
class Packages:
    kernel_hold: tuple[str, ...]
    unattended_blacklist: tuple[str, ...]
    # The distribution's Slurm packages, which an image must not carry.
    distribution_slurm: tuple[str, ...]
    head: tuple[str, ...]
    login: tuple[str, ...]
    compute: tuple[str, ...]


@dataclass(frozen=True)
class Containers:
    """Enroot and Pyxis: what is downloaded, where they keep images, the local NVMe."""

    enroot: EnrootDownloads
    enroot_dependencies: tuple[str, ...]
    enroot_hooks: tuple[str, ...]
    compute_enroot: EnrootPaths
    login_enroot: EnrootPaths
    pyxis: PyxisDownload
    nvme_mount: str


@dataclass(frozen=True)
class Storage:
    # Empty when the cluster has no FSx for Lustre file system.
    fsx_mount_point: str
    lustre_repo: LustreRepository


@dataclass(frozen=True)
class GroupSettings:
    name: str
    slurmd_conf: str
    # Topology= for a type EC2 does not describe; "" when the node asks EC2 (node_conf).
    topology: str
    lustre_efa_interfaces: int
    nvswitch: bool


@dataclass(frozen=True)
class Slurm:
    site: SlurmSite
    # How the nodes build the pinned source, and its S3 key beside the bundle.
    build: NodeBuild
    source_key: str
    controller_hostname: str
    conf_server: str
    topology_root: str
    restart_keys: tuple[str, ...]
    lock_busy_exit: int
    fabric_manager_unit: str
    dcgm_unit: str
    groups: tuple[GroupSettings, ...]


@dataclass(frozen=True)
class InstalledFiles:
    """The absolute paths each role installs from its files/<role>/ tree."""

    controller: list[str]
    node_slurm: list[str]
    agents: list[str]
    agent_units: list[str]
    jobs: list[str]
    lib: list[str]
    # The GPU node collector's units (compute nodes) and the timers among them.
    node_metrics: list[str]
    node_metrics_timers: list[str]
    # Root's files that let the cluster's people in (gpucluster.bootstrap.people), every role.
    people: list[str]
    # The node names' units (gpucluster.bootstrap.node_hosts), login and compute nodes.
    node_hosts_units: list[str]
    node_hosts_timers: list[str]


def lustre_efa_interfaces(resolved: ResolvedCluster, group: ResolvedGroup) -> int:
    """How many EFA devices LNet uses for FSx on nodes of `group`; 0 means TCP only."""
    fsx = resolved.fsx_lustre
    if fsx is None or not fsx.efa or group.efa_count == 0:
        return 0
    if group.instance.name in LUSTRE_EFA_BY_TYPE:
        return min(group.efa_count, LUSTRE_EFA_BY_TYPE[group.instance.name])
    if group.efa_count >= LUSTRE_EFA_LARGE:
        return LUSTRE_EFA_LARGE
    return min(group.efa_count, 2)


def group_settings(resolved: ResolvedCluster) -> tuple[GroupSettings, ...]:
    return tuple(
        GroupSettings(
            name=group.name,
            slurmd_conf=slurm_conf.slurmd_conf_line(resolved, group),
            topology=registration_topology(group),
            lustre_efa_interfaces=lustre_efa_interfaces(resolved, group),
            nvswitch=group.instance.nvswitch,
        )
        for group in resolved.groups
    )


def boot() -> Boot:
    return Boot(
        waits=boot_budget.shell_values(),
        bootstrap_log=node_logs.BOOTSTRAP_LOG,
        failure_tag=names.BOOTSTRAP_FAILURE_TAG,
        lifecycle_hook=names.LAUNCH_LIFECYCLE_HOOK,
        compute_node_name=names.COMPUTE_NODE_NAME_FORMAT.format(group="${1}", instance_id="${2}"),
        cw_agent_ctl=node_logs.AGENT_CTL,
        cw_agent=node_logs.CLOUDWATCH_AGENT,
    )


def packages() -> Packages:
    return Packages(
        kernel_hold=KERNEL_HOLD_PACKAGES,
        unattended_blacklist=UNATTENDED_BLACKLIST,
        distribution_slurm=DISTRIBUTION_SLURM_PACKAGES,
        head=HEAD_PACKAGES,
        login=(*BASE_PACKAGES, *NODE_TOOLS, *BUILD_PACKAGES),
        compute=(*BASE_PACKAGES, *NODE_TOOLS, *COMPUTE_TOOLS, *BUILD_PACKAGES),
    )


def containers(resolved: ResolvedCluster) -> Containers:
    return Containers(
        enroot=enroot_downloads(resolved),
        enroot_dependencies=ENROOT_DEPENDENCIES,
        enroot_hooks=ENROOT_HOOKS,
        compute_enroot=COMPUTE_ENROOT,
        login_enroot=LOGIN_ENROOT,
        pyxis=pyxis_download(resolved),
        nvme_mount=NVME_MOUNT,
    )


def storage(resolved: ResolvedCluster) -> Storage:
    fsx = resolved.fsx_lustre
    return Storage(
        fsx_mount_point=fsx.mount_point if fsx is not None else "",
        lustre_repo=lustre_client.repository(resolved),
    )


def slurm(resolved: ResolvedCluster, site: SlurmSite, build: NodeBuild) -> Slurm:
    return Slurm(
        site=site,
        build=build,
        source_key=names.slurm_source_object_key(build.sha256),
        controller_hostname=slurm_conf.controller_hostname(resolved, site),
        conf_server=slurm_conf.conf_server(resolved, site),
        topology_root=TOPOLOGY_ROOT_UNIT,
        restart_keys=SLURMCTLD_RESTART_KEYS,
        lock_busy_exit=SLURMCTLD_LOCK_BUSY_EXIT,
        fabric_manager_unit=health_probes.FABRIC_MANAGER_UNIT,
        dcgm_unit=health_probes.DCGM_UNIT,
        groups=group_settings(resolved),
    )


def render_cluster_conf(
    resolved: ResolvedCluster, site: SlurmSite, build: NodeBuild, files: InstalledFiles
) -> str:
    return render(
        "userdata/conf/cluster.sh.j2",
        cluster=resolved,
        boot=boot(),
        packages=packages(),
        containers=containers(resolved),
        storage=storage(resolved),
        slurm=slurm(resolved, site, build),
        files=files,
        ssh_adoption=ssh_adoption.bootstrap_settings(resolved),
        people=people_boot(),
        metadata_guard=metadata_guard.bootstrap_settings(),
        ecr_login=ecr_login.bootstrap_settings(),
        accounting=accounting_boot(resolved, site),
        rest_api=rest_api_boot(resolved, site),
    )

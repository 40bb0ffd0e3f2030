"""The Slurm controller's configuration, the compute nodes' `slurmd -Z --conf` line
and their health check, rendered from a `ClusterConfig`.

Slurm runs configless with dynamic nodes: the head node's slurmctld serves these
files, and each compute node registers itself with `slurmd -Z --conf "<line>"`.
Nothing lists node names ahead of time; partitions select nodes by feature
(the compute group's name) through nodesets.

Everything that differs between a deployed cluster and the integration test
(host names, paths, ports, timeouts, the process-tracking plugins) is a field of
`SlurmSite`, whose defaults are production; tests pass another `SlurmSite`
instead of editing the rendered text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster import names
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.slurm import accounting
from gpucluster.slurm.accounting import AccountingSettings, AccountingSite
from gpucluster.slurm.health_probes import FABRIC_MANAGER_UNIT, KILL_GRACE_SECONDS, ProbeTimeouts

# SPANNING_PARTITION and real_memory_mib stay importable from here, where callers name them.
from gpucluster.slurm.partitions import SPANNING_PARTITION as SPANNING_PARTITION
from gpucluster.slurm.partitions import nodeset, partitions, real_memory_mib

# MaxNodeCount bounds the node records slurmctld holds, dynamic ones included. An Auto
# Scaling replacement registers under a new name while the old record waits for the
# cleanup timer, so leave room for every node to be replaced once; and the Capacity
# Block controller keeps one placeholder node (State=FUTURE) per block group so its
# maintenance reservation can exist before the block's nodes register.
MAX_NODE_COUNT_FACTOR = 2

TEMPLATE_DIR = "slurm"

_HOSTNAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class SlurmSite:
    """Site-specific values of the rendered configuration; defaults are production.

    controller_hostname: the head node's short hostname (`hostname -s`), which the head
        bootstrap sets; None means `<cluster>-head`.
    controller_addr: how other hosts reach slurmctld; None means the private DNS name
        `slurmctld.<zone>` (the head node's A record), so the controller's IP address
        need not be known at synth.
    """

    controller_hostname: str | None = None
    controller_addr: str | None = None
    slurmctld_port: int = 6817
    slurmd_port: int = 6818
    slurm_user: str = "slurm"
    config_dir: str = "/etc/slurm"
    state_save_location: str = "/home/.slurm/state"
    slurmd_spool_dir: str = "/var/spool/slurmd"
    slurmctld_pid_file: str = "/run/slurmctld.pid"
    slurmd_pid_file: str = "/run/slurmd.pid"
    slurmctld_log_file: str = "/var/log/slurm/slurmctld.log"
    slurmd_log_file: str = "/var/log/slurm/slurmd.log"
    munge_socket: str = "/run/munge/munge.socket.2"
    # Lifetime of job credentials, which is also how long a requeued job waits before it
    # may start again; None keeps Slurm's default (120 s).
    cred_expire_seconds: int | None = None
    slurmd_timeout: int = 300
    # How long slurmctld waits on one RPC; a dead node is declared DOWN only after pings to
    # it time out, so this bounds how fast that happens. None keeps Slurm's 10 s.
    message_timeout: int | None = None
    # Seconds between the main and the backfill scheduler's passes; None keeps Slurm's
    # defaults (60 and 30), which suit a production queue.
    sched_interval: int | None = None
    bf_interval: int | None = None
    slurmctld_timeout: int = 120
    proctrack_type: str = "proctrack/cgroup"
    task_plugin: str = "task/cgroup,task/affinity"
    # Consider each dynamic node's --conf line authoritative rather than its hardware:
    # only for a test host that is not the instance type it impersonates.
    trust_node_config: bool = False
    healthcheck_program: str = "/usr/local/sbin/gpucluster-healthcheck"
    healthcheck_interval: int = 300
    probe_timeouts: ProbeTimeouts = ProbeTimeouts()
    # The health check runs with an empty environment; this PATH finds nvidia-smi,
    # fi_info (the EFA installer's /opt/amazon/efa/bin), mountpoint, munge and scontrol.
    healthcheck_path: str = "/opt/amazon/efa/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # The slurm.conf the health check's scontrol reads; None is Slurm's own lookup, which
    # on a configless node finds the copy slurmd fetched (/run/slurm/conf). Several test
    # clusters on one host share that link, so the test names its file.
    healthcheck_slurm_conf: str | None = None
    # Prepended to every mount the health check requires (/home, the FSx mount point).
    mount_root: str = ""
    pyxis_library: str = "/usr/local/lib/slurm/spank_pyxis.so"
    pyxis_runtime_path: str = "/run/pyxis"
    accounting: AccountingSite = AccountingSite()

    def __post_init__(self) -> None:
        for port in (self.slurmctld_port, self.slurmd_port):
            if not 1 <= port <= 65535:
                raise ValueError(f"SlurmSite: port {port} is outside 1-65535")
        if self.controller_hostname is not None and not _HOSTNAME.match(self.controller_hostname):
            raise ValueError(
                f"SlurmSite.controller_hostname '{self.controller_hostname}' is not a short host name"
            )
        if self.mount_root.endswith("/"):
            raise ValueError("SlurmSite.mount_root must not end with '/'")
        if self.healthcheck_interval <= 0:
            raise ValueError("SlurmSite.healthcheck_interval must be positive (0 disables the check)")


@dataclass(frozen=True)
class SlurmFiles:
    """The controller's configuration files, keyed by file name in `SlurmSite.config_dir`."""

    slurm_conf: str
    gres_conf: str
    cgroup_conf: str
    plugstack_conf: str
    pyxis_conf: str
    # The head's own slurmdbd's, when it runs one; never served to other nodes.
    slurmdbd_conf: str | None = None

    def by_path(self, site: SlurmSite) -> dict[str, str]:
        files = {
            f"{site.config_dir}/slurm.conf": self.slurm_conf,
            f"{site.config_dir}/gres.conf": self.gres_conf,
            f"{site.config_dir}/cgroup.conf": self.cgroup_conf,
            f"{site.config_dir}/plugstack.conf": self.plugstack_conf,
            f"{plugstack_dir(site)}/pyxis.conf": self.pyxis_conf,
        }
        if self.slurmdbd_conf is not None:
            files[slurmdbd_conf_path(site)] = self.slurmdbd_conf
        return files


def node_local_files(resolved: ResolvedCluster, site: SlurmSite = SlurmSite()) -> dict[str, str]:
    """Files every host that runs slurmd or srun/sbatch (compute and login) must hold itself.

    slurmctld serves plugstack.conf to configless nodes but not the files it includes
    (seen on 22.05.8 and 24.11.5: the slurmd conf-cache holds slurm.conf, gres.conf,
    cgroup.conf and plugstack.conf only), so the Pyxis include file is installed on each such host.
    PlugStackConfig is an absolute path, which a node may resolve against its own disk
    rather than the served copy, so plugstack.conf itself is installed too: the node then
    never depends on what the distribution's package left in that file.
    """
    files = render_slurm_files(resolved, site)
    return {
        f"{site.config_dir}/plugstack.conf": files.plugstack_conf,
        f"{plugstack_dir(site)}/pyxis.conf": files.pyxis_conf,
    }


def controller_hostname(resolved: ResolvedCluster, site: SlurmSite = SlurmSite()) -> str:
    return site.controller_hostname or f"{resolved.name}-head"


def controller_addr(resolved: ResolvedCluster, site: SlurmSite = SlurmSite()) -> str:
    return site.controller_addr or resolved.names.controller_host


def conf_server(resolved: ResolvedCluster, site: SlurmSite = SlurmSite()) -> str:
    """The `--conf-server` argument of compute nodes' slurmd."""
    return f"{controller_addr(resolved, site)}:{site.slurmctld_port}"


def slurmdbd_conf_path(site: SlurmSite) -> str:
    return f"{site.config_dir}/slurmdbd.conf"


def plugstack_dir(site: SlurmSite) -> str:
    return f"{site.config_dir}/plugstack.conf.d"


def node_name(group: str, instance_id: str) -> str:
    """The Slurm node name of an instance (names.compute_node_name), stable for its lifetime."""
    return names.compute_node_name(group, instance_id)


def gres(group: ComputeGroupConfig) -> str:
    instance = group.instance
    return f"gpu:{instance.slurm_gpu_type}:{instance.gpu_count}"


def slurmd_conf_line(resolved: ResolvedCluster, group: ResolvedGroup) -> str:
    """The `--conf` string a compute node of `group` passes to `slurmd -Z`.

    `slurmd --conf` takes node-line syntax except NodeName and Port (slurmd(8)). The GRES
    count and type are what NVML must find (gres.conf: AutoDetect=nvml). A type with a
    verified layout (catalog `gpu_sockets`) registers it as Sockets, CoresPerSocket and
    ThreadsPerCore, and slurmctld refuses a node whose hardware has fewer ("INVALID_REG", "Low
    socket*core*thread count": AWS PCS user guide, troubleshooting-invalid-registration),
    which the bootstrap's registration wait reports, so a binding never meets other
    hardware silently. Other types give
    no layout and slurmd reports what it detects. CPUs is never given: without the full
    layout it replaces the detected topology with one socket per CPU (seen on 22.05:
    "SocketsPerBoard=192:1(hw) CoresPerSocket=1:2(hw)"), and with it Slurm derives it.
    """
    _check_member(resolved, group)
    instance = group.instance
    features = f"{group.feature},{instance.name}"
    line = f"Gres={gres(group.config)} Feature={features} RealMemory={real_memory_mib(group.config)}"
    if instance.gpu_sockets is None:
        return line
    layout = instance.gpu_sockets.layout
    return (
        f"{line} Sockets={layout.sockets} CoresPerSocket={layout.cores_per_socket} "
        f"ThreadsPerCore={layout.threads_per_core}"
    )


def _check_member(resolved: ResolvedCluster, group: ResolvedGroup) -> None:
    if group not in resolved.groups:
        raise ValueError(f"compute group {group.name} is not part of cluster {resolved.name}")


def max_node_count(cfg: ClusterConfig) -> int:
    nodes = sum(group.count for group in cfg.compute_groups)
    placeholders = sum(1 for group in cfg.compute_groups if group.is_capacity_block)
    return MAX_NODE_COUNT_FACTOR * nodes + placeholders


def _scheduler_parameters(site: SlurmSite) -> str:
    parts = []
    if site.sched_interval is not None:
        parts.append(f"sched_interval={site.sched_interval}")
    if site.bf_interval is not None:
        parts.append(f"bf_interval={site.bf_interval}")
    return ",".join(parts)


def render_slurm_files(
    resolved: ResolvedCluster,
    site: SlurmSite = SlurmSite(),
    accounting_settings: AccountingSettings | None = None,
) -> SlurmFiles:
    """The controller's files. With the config's `accounting:` (or `accounting_settings`,
    which replaces what it says), slurm.conf sends job records to slurmdbd, and the head's
    slurmdbd.conf comes along when the head runs one."""
    addr = controller_addr(resolved, site)
    accounting_settings = accounting_settings or accounting.accounting_settings(resolved)
    values = {
        "cfg": resolved.config,
        "site": site,
        "controller_hostname": controller_hostname(resolved, site),
        "controller_addr": addr,
        "max_node_count": max_node_count(resolved.config),
        "nodesets": [(nodeset(group.config), group.feature) for group in resolved.groups],
        "partitions": partitions(resolved),
        "plugstack_dir": plugstack_dir(site),
        "scheduler_parameters": _scheduler_parameters(site),
        "accounting_lines": (
            []
            if accounting_settings is None
            else accounting.slurm_conf_lines(accounting_settings, site.accounting, addr)
        ),
    }
    slurmdbd_conf = None
    if accounting_settings is not None and accounting_settings.runs_slurmdbd:
        slurmdbd_conf = accounting.render_slurmdbd_conf(
            accounting_settings,
            site.accounting,
            dbd_host=controller_hostname(resolved, site),
            slurm_user=site.slurm_user,
            auth_socket=site.munge_socket,
        )
    return SlurmFiles(
        slurm_conf=render(f"{TEMPLATE_DIR}/slurm.conf.j2", **values),
        gres_conf=render(f"{TEMPLATE_DIR}/gres.conf.j2", **values),
        cgroup_conf=render(f"{TEMPLATE_DIR}/cgroup.conf.j2", **values),
        plugstack_conf=render(f"{TEMPLATE_DIR}/plugstack.conf.j2", **values),
        pyxis_conf=render(f"{TEMPLATE_DIR}/pyxis.conf.j2", **values),
        slurmdbd_conf=slurmdbd_conf,
    )


def required_mounts(cfg: ClusterConfig, site: SlurmSite = SlurmSite()) -> list[str]:
    mounts = ["/home"]
    if cfg.storage.fsx_lustre is not None:
        mounts.append(cfg.storage.fsx_lustre.mount_point)
    return [f"{site.mount_root}{mount}" for mount in mounts]


def render_healthcheck(resolved: ResolvedCluster, group: ResolvedGroup, site: SlurmSite = SlurmSite()) -> str:
    """The HealthCheckProgram for nodes of `group` (also run by the bootstrap with --pre-join)."""
    _check_member(resolved, group)
    instance = group.instance
    mounts = required_mounts(resolved.config, site)
    site.probe_timeouts.check_budget(len(mounts))
    return render(
        f"{TEMPLATE_DIR}/healthcheck.sh.j2",
        cluster=resolved.name,
        group=group.name,
        instance_type=instance.name,
        gpu_count=instance.gpu_count,
        efa_count=group.efa_count,
        nvswitch=instance.nvswitch,
        fabric_manager_unit=FABRIC_MANAGER_UNIT,
        mounts=mounts,
        timeouts=site.probe_timeouts,
        kill_grace=KILL_GRACE_SECONDS,
        munge_socket=site.munge_socket,
        tool_path=site.healthcheck_path,
        slurm_conf=site.healthcheck_slurm_conf,
    )

"""Where the rendered Slurm files put things on a host: `SlurmSite`.

Everything that differs between a deployed cluster and the integration test (host
names, paths, ports, timeouts, the process-tracking plugins) is a field of
`SlurmSite`, whose defaults are production; tests pass another `SlurmSite` instead
of editing the rendered text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster.slurm.accounting import DEFAULT_MUNGE_SOCKET, AccountingSite
from gpucluster.slurm.health_probes import ProbeTimeouts
from gpucluster.slurm.rest_api import RestApiSite

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
    munge_socket: str = DEFAULT_MUNGE_SOCKET
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
    # Keeps the compute nodes' names in hosts_file (gpucluster.agents.node_hosts): run by the
    # Prolog's health check, and by a timer on login and compute nodes. The suite points both
    # into its root.
    node_hosts_program: str = "/usr/local/sbin/gpucluster-node-hosts"
    hosts_file: str = "/etc/hosts"
    healthcheck_interval: int = 300
    probe_timeouts: ProbeTimeouts = ProbeTimeouts()
    # How long DCGM's diagnostic may run at any level; None: gpucluster.dcgm's bound per level.
    # Tests shorten it to see a hung diagnostic named within seconds.
    dcgm_bound_seconds: int | None = None
    # The health check runs with an empty environment; this PATH finds nvidia-smi,
    # fi_info (the EFA installer's /opt/amazon/efa/bin), mountpoint, munge and scontrol.
    healthcheck_path: str = "/opt/amazon/efa/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # The slurm.conf the health check's scontrol reads; None is Slurm's own lookup, which
    # on a configless node finds the copy slurmd fetched (/run/slurm/conf). Several test
    # clusters on one host share that link, so the test names its file.
    healthcheck_slurm_conf: str | None = None
    # Prepended to every mount the health check requires (/home, the FSx mount point).
    mount_root: str = ""
    # topology/tree places jobs under EC2's network switches (topology.conf); the session
    # test cluster runs topology/flat, since nothing places its nodes, and its topology
    # test switches to tree itself.
    topology_plugin: str = "topology/tree"
    pyxis_library: str = "/usr/local/lib/slurm/spank_pyxis.so"
    pyxis_runtime_path: str = "/run/pyxis"
    accounting: AccountingSite = AccountingSite()
    rest_api: RestApiSite = RestApiSite()

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

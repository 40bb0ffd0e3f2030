"""The Slurm controller's configuration, rendered from a `ResolvedCluster`.

Slurm runs configless with dynamic nodes: the head node's slurmctld serves these
files, and each compute node registers itself with `slurmd -Z --conf "<line>"`.
Nothing lists node names ahead of time; partitions select nodes by feature
(the compute group's name) through nodesets.

A compute node's own files (its `--conf` line, its health check) are node_conf's,
and where files go on a host is site's `SlurmSite`; both stay importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.agents.ec2_topology import build, render_conf
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster
from gpucluster.slurm import accounting
from gpucluster.slurm.accounting import AccountingSettings
from gpucluster.slurm.health_probes import PROLOG_EPILOG_TIMEOUT_SECONDS

# These stay importable from here, where callers name them.
from gpucluster.slurm.node_conf import gres as gres
from gpucluster.slurm.node_conf import node_name as node_name
from gpucluster.slurm.node_conf import render_healthcheck as render_healthcheck
from gpucluster.slurm.node_conf import required_mounts as required_mounts
from gpucluster.slurm.node_conf import slurmd_conf_line as slurmd_conf_line
from gpucluster.slurm.partitions import SPANNING_PARTITION as SPANNING_PARTITION
from gpucluster.slurm.partitions import nodeset, partitions
from gpucluster.slurm.partitions import real_memory_mib as real_memory_mib
from gpucluster.slurm.site import SlurmSite as SlurmSite

# MaxNodeCount bounds the node records slurmctld holds, dynamic ones included. An Auto
# Scaling replacement registers under a new name while the old record waits for the
# cleanup timer, so leave room for every node to be replaced once; and the Capacity
# Block controller keeps one placeholder node (State=FUTURE) per block group so its
# maintenance reservation can exist before the block's nodes register.
MAX_NODE_COUNT_FACTOR = 2

TEMPLATE_DIR = "slurm"


@dataclass(frozen=True)
class SlurmFiles:
    """The controller's configuration files, keyed by file name in `SlurmSite.config_dir`."""

    slurm_conf: str
    gres_conf: str
    cgroup_conf: str
    plugstack_conf: str
    pyxis_conf: str
    # The tree's seed: the root and flat switches only; the topology agent rewrites it.
    topology_conf: str
    # JobSubmitPlugins=lua: a job from a uid the head cannot name is refused, never held.
    job_submit_lua: str
    # The head's own slurmdbd's, when it runs one; never served to other nodes.
    slurmdbd_conf: str | None = None

    def by_path(self, site: SlurmSite) -> dict[str, str]:
        files = {
            f"{site.config_dir}/slurm.conf": self.slurm_conf,
            f"{site.config_dir}/gres.conf": self.gres_conf,
            f"{site.config_dir}/cgroup.conf": self.cgroup_conf,
            f"{site.config_dir}/plugstack.conf": self.plugstack_conf,
            f"{plugstack_dir(site)}/pyxis.conf": self.pyxis_conf,
            topology_conf_path(site): self.topology_conf,
            f"{site.config_dir}/job_submit.lua": self.job_submit_lua,
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


def topology_conf_path(site: SlurmSite) -> str:
    return f"{site.config_dir}/topology.conf"


def plugstack_dir(site: SlurmSite) -> str:
    return f"{site.config_dir}/plugstack.conf.d"


def max_node_count(resolved: ResolvedCluster) -> int:
    nodes = sum(group.count for group in resolved.groups)
    placeholders = sum(1 for group in resolved.groups if group.capacity_type == "capacity-block")
    return MAX_NODE_COUNT_FACTOR * nodes + placeholders


def _scheduler_parameters(resolved: ResolvedCluster, site: SlurmSite) -> str:
    parts = []
    if resolved.health.prolog_check:
        # A failing Prolog requeues the job held unless this is set (slurm.conf(5), 25.11):
        # the job should start again on another node, not wait for a person.
        parts.append("nohold_on_prolog_fail")
    if site.sched_interval is not None:
        parts.append(f"sched_interval={site.sched_interval}")
    if site.bf_interval is not None:
        parts.append(f"bf_interval={site.bf_interval}")
    return ",".join(parts)


def seed_topology_conf(resolved: ResolvedCluster) -> str:
    """topology.conf before the topology agent's first run: slurmctld refuses to start
    without a switch, and places dynamic nodes only under a root it knows."""
    return render_conf(
        build((), {}),
        f"topology.conf of gpucluster {resolved.name}: the head's topology agent rewrites it from EC2\n"
        "DescribeInstanceTopology every minute (gpucluster.agents.topology_agent)",
    )


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
        "cluster": resolved,
        "site": site,
        "controller_hostname": controller_hostname(resolved, site),
        "controller_addr": addr,
        "max_node_count": max_node_count(resolved),
        "nodesets": [(nodeset(group), group.feature) for group in resolved.groups],
        "partitions": partitions(resolved),
        "plugstack_dir": plugstack_dir(site),
        "scheduler_parameters": _scheduler_parameters(resolved, site),
        "prolog_epilog_timeout": PROLOG_EPILOG_TIMEOUT_SECONDS,
        "accounting_lines": (
            []
            if accounting_settings is None
            else accounting.slurm_conf_lines(accounting_settings, site.accounting, addr, site.munge_socket)
        ),
        "jwt_lines": accounting.jwt_lines(
            resolved.rest_api is not None
            or (accounting_settings is not None and accounting_settings.rest_api),
            site.accounting,
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
        topology_conf=seed_topology_conf(resolved),
        job_submit_lua=render(f"{TEMPLATE_DIR}/job_submit.lua.j2", cluster=resolved.name),
        slurmdbd_conf=slurmdbd_conf,
    )

"""What login and compute nodes install to know the compute nodes by name: the program that
rewrites their block of /etc/hosts (gpucluster.agents.node_hosts), which the compute nodes'
Prolog health check also runs, and the systemd timer that runs it every 30 s."""

from __future__ import annotations

from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster
from gpucluster.resolved.node_layout import NodeLayout
from gpucluster.slurm.health_probes import KILL_GRACE_SECONDS
from gpucluster.slurm.site import SlurmSite

UNITS = ("gpucluster-node-hosts.service", "gpucluster-node-hosts.timer")
TIMERS = tuple(unit for unit in UNITS if unit.endswith(".timer"))
AGENT = "gpucluster.agents.node_hosts"
PYTHON = "/usr/bin/python3"


def program(resolved: ResolvedCluster, site: SlurmSite, agents_dir: str, python: str = PYTHON) -> str:
    """site.node_hosts_program: runs the agent in its package tree `agents_dir` under the
    Prolog's bound."""
    return render(
        "slurm/node-hosts.sh.j2",
        cluster=resolved.name,
        hosts_file=site.hosts_file,
        tool_path=site.healthcheck_path,
        slurm_conf=site.healthcheck_slurm_conf,
        kill_grace=KILL_GRACE_SECONDS,
        timeout=site.probe_timeouts.node_hosts,
        python=python,
        agents_dir=agents_dir,
        agent=AGENT,
    )


def node_files(resolved: ResolvedCluster, site: SlurmSite, node: NodeLayout) -> dict[str, str]:
    """The program and its units, by the absolute path a login or compute node installs each at."""
    units = {
        f"/etc/systemd/system/{unit}": render(
            f"systemd/node/{unit}.j2", node=node, program=site.node_hosts_program, hosts_file=site.hosts_file
        )
        for unit in UNITS
    }
    return {site.node_hosts_program: program(resolved, site, node.agents_dir), **units}

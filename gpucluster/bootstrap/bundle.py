"""The bootstrap bundle: every script and file a node runs or installs, by bundle path.

A node's thin user-data fetches the bundle and runs `bin/bootstrap.sh --role ...`.
The shell steps live as plain files under templates/userdata/bundle/ (shellcheck
reads them as they ship); everything that depends on the cluster is rendered into
`conf/cluster.sh` (gpucluster.bootstrap.cluster_conf) and the per-role file trees under
`files/<role>/`, which mirror the absolute paths the node installs them to. Versions,
checksums, names and paths come from the ResolvedCluster, never from the templates.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.agent_package import agent_tree
from gpucluster.agents import node_metrics, repair_settings
from gpucluster.bootstrap import (
    accounting,
    ecr_login,
    metadata_guard,
    node_hosts,
    people,
    rest_api,
    ssh_adoption,
)
from gpucluster.bootstrap.cluster_conf import InstalledFiles, render_cluster_conf
from gpucluster.bootstrap.container_runtime import COMPUTE_ENROOT, LOGIN_ENROOT, enroot_conf
from gpucluster.jobs import validation as validation_jobs
from gpucluster.launch.node_lib import node_lib_files
from gpucluster.launch.torchrun import torchrun_files
from gpucluster.rendering import TEMPLATE_ROOT, render
from gpucluster.resolved import ResolvedCluster
from gpucluster.resolved.node_layout import AGENTS_TREE
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.build import NodeBuild
from gpucluster.slurm.conf import SlurmSite

BUNDLE_SOURCES = TEMPLATE_ROOT / "userdata" / "bundle"
# The agents the bundle's nodes run, each as `python3 -m` in the bundle's package tree of
# them (NodeLayout.agents_dir): the head's timers (templates/systemd) and its accounting step
# (lib/accounting.sh), the compute nodes' collector (templates/systemd/compute) and the
# login and compute nodes' /etc/hosts refresh.
NODE_AGENTS = (
    "gpucluster.agents.capacity_controller",
    "gpucluster.agents.node_cleanup",
    "gpucluster.agents.node_repair",
    "gpucluster.agents.slurm_metrics",
    "gpucluster.agents.topology_agent",
    accounting.AGENT,
    "gpucluster.agents.node_metrics",
    node_hosts.AGENT,
)
SYSTEMD_TEMPLATES = TEMPLATE_ROOT / "systemd"
NODE_METRICS_UNITS = ("gpucluster-node-metrics.service", "gpucluster-node-metrics.timer")


@dataclass(frozen=True)
class Agents:
    code: dict[str, str]
    installed: dict[str, str]
    timers: list[str]


def agent_settings(resolved: ResolvedCluster) -> dict[str, str]:
    """The agents' settings beyond cluster and region, from the config (agents.env)."""
    health = resolved.health
    return {
        repair_settings.ENABLED_SETTING: "true" if health.replace_failed_nodes else "false",
        repair_settings.BOUND_SETTING: str(health.max_replacements_per_hour),
        repair_settings.GRACE_SETTING: str(health.drain_grace_minutes),
    }


def head_agents(resolved: ResolvedCluster) -> Agents:
    """The agents' code (bundle paths), what the head installs (absolute paths), the timers it enables."""
    code = {f"{AGENTS_TREE}/{path}": text for path, text in agent_tree(NODE_AGENTS).items()}
    units = sorted(
        path.name.removesuffix(".j2")
        for pattern in ("*.service.j2", "*.timer.j2")
        for path in SYSTEMD_TEMPLATES.glob(pattern)
    )
    node = resolved.node
    installed = {f"/etc/systemd/system/{unit}": render(f"systemd/{unit}.j2", node=node) for unit in units}
    installed[node.agent_env_file] = render(
        "systemd/agents.env.j2", cluster=resolved, settings=agent_settings(resolved)
    )
    return Agents(code=code, installed=installed, timers=[unit for unit in units if unit.endswith(".timer")])


def node_metrics_units(resolved: ResolvedCluster) -> dict[str, str]:
    """The GPU node collector's systemd units (compute nodes; it runs from the bundle's agents)."""
    return {
        f"/etc/systemd/system/{unit}": render(
            f"systemd/compute/{unit}.j2",
            cluster=resolved,
            node=resolved.node,
            state_dir_name=node_metrics.STATE_DIR_NAME,
        )
        for unit in NODE_METRICS_UNITS
    }


def _role_tree(role: str, files: dict[str, str]) -> dict[str, str]:
    """Bundle paths of files a role installs at their absolute paths."""
    for path in files:
        if not path.startswith("/"):
            raise ValueError(f"{role}: install path {path!r} is not absolute")
    return {f"files/{role}{path}": text for path, text in files.items()}


def _static_sources() -> dict[str, str]:
    return {
        str(path.relative_to(BUNDLE_SOURCES)): path.read_text()
        for path in sorted(BUNDLE_SOURCES.rglob("*.sh"))
    }


def bundle_files(
    resolved: ResolvedCluster, site: SlurmSite | None = None, slurm: NodeBuild | None = None
) -> dict[str, str]:
    """Every file of the bootstrap bundle, keyed by its path inside the bundle.

    `site` is production by default; the tests pass one whose health check finds their
    stub commands, as gpucluster.slurm.conf's own tests do. `slurm` is the pinned build by
    default; the tests pass one whose source is their small stand-in.
    """
    site = site or SlurmSite()
    controller = slurm_conf.render_slurm_files(resolved, site).by_path(site)
    # slurmdbd.conf is the head's too, but private (lib/accounting.sh installs it, mode 600).
    slurmdbd_conf = slurm_conf.slurmdbd_conf_path(site)
    # What slurmd and srun read locally although the controller serves the rest.
    node_slurm = slurm_conf.node_local_files(resolved, site)
    agents = head_agents(resolved)
    # The jobs users submit from a login node: validation, then training.
    jobs = {**validation_jobs.job_files(resolved), **torchrun_files(resolved)}
    # Every group's nodes keep the same paths; gpu-env.sh's content is the group's own.
    lib = {group.name: node_lib_files(resolved, group) for group in resolved.groups}
    metrics_units = node_metrics_units(resolved)
    access = people.access_files(resolved.name, resolved.users)
    hosts = node_hosts.node_files(resolved, site, resolved.node)
    files = {
        **_static_sources(),
        **agents.code,
        **accounting.accounts_file(resolved),
        **accounting.database_ca_file(resolved),
        people.USERS_FILE: people.users_table(resolved.users),
    }
    files["conf/cluster.sh"] = render_cluster_conf(
        resolved,
        site,
        slurm or NodeBuild(),
        InstalledFiles(
            controller=sorted(path for path in controller if path != slurmdbd_conf),
            node_slurm=sorted(node_slurm),
            agents=sorted(agents.installed),
            agent_units=agents.timers,
            jobs=sorted(jobs),
            lib=sorted(next(iter(lib.values()))),
            node_metrics=sorted(metrics_units),
            node_metrics_timers=[unit for unit in NODE_METRICS_UNITS if unit.endswith(".timer")],
            people=sorted(access),
            node_hosts_units=sorted(path for path in hosts if path != site.node_hosts_program),
            node_hosts_timers=list(node_hosts.TIMERS),
        ),
    )
    # Every role's first step.
    guard = metadata_guard.guard_files(resolved)
    files.update(
        _role_tree(
            "head",
            {**guard, **controller, **agents.installed, **rest_api.head_files(resolved, site), **access},
        )
    )
    files.update(
        _role_tree(
            "login",
            {
                **guard,
                **ecr_login.helper_files(resolved),
                "/etc/enroot/enroot.conf": enroot_conf(resolved, "login", LOGIN_ENROOT),
                **node_slurm,
                **jobs,
                **access,
                **hosts,
            },
        )
    )
    for group in resolved.groups:
        files.update(
            _role_tree(
                f"compute-{group.name}",
                {
                    **guard,
                    **ecr_login.helper_files(resolved),
                    site.healthcheck_program: slurm_conf.render_healthcheck(resolved, group, site),
                    "/etc/enroot/enroot.conf": enroot_conf(
                        resolved, f"compute group {group.name}", COMPUTE_ENROOT
                    ),
                    **node_slurm,
                    **lib[group.name],
                    **ssh_adoption.adoption_files(resolved),
                    **metrics_units,
                    **access,
                    **hosts,
                },
            )
        )
    return files

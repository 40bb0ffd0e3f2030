"""The bootstrap bundle: every script and file a node runs or installs, by bundle path.

A node's thin user-data fetches the bundle and runs `bin/bootstrap.sh --role ...`.
The shell steps live as plain files under templates/userdata/bundle/ (shellcheck
reads them as they ship); everything that depends on the config is rendered into
`conf/cluster.sh` and the per-role file trees under `files/<role>/`, which mirror the
absolute paths the node installs them to. Versions, checksums and names come from
the config and gpucluster.names / gpucluster.slurm.conf, never from the templates.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpucluster import names
from gpucluster.bootstrap import boot_budget, lustre_client, node_logs, ssh_adoption
from gpucluster.bootstrap.container_runtime import (
    COMPUTE_ENROOT,
    ENROOT_DEPENDENCIES,
    ENROOT_HOOKS,
    LOGIN_ENROOT,
    NVME_MOUNT,
    enroot_conf,
    enroot_downloads,
    pyxis_download,
)
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
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.efa import efa_count
from gpucluster.jobs import validation as validation_jobs
from gpucluster.launch.node_lib import node_lib_files
from gpucluster.launch.torchrun import torchrun_files
from gpucluster.rendering import TEMPLATE_ROOT, render
from gpucluster.resolved.node_layout import NODE_LAYOUT, NodeLayout
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm import health_probes
from gpucluster.slurm.build import NodeBuild
from gpucluster.slurm.conf import SlurmSite

BUNDLE_SOURCES = TEMPLATE_ROOT / "userdata" / "bundle"
# The head node's agents run from the unpacked bundle (NodeLayout.agents_dir), started by
# the systemd timers rendered from templates/systemd.
AGENT_SOURCES = Path(__file__).resolve().parents[1] / "agents"
SYSTEMD_TEMPLATES = TEMPLATE_ROOT / "systemd"

# Kept importable from here, where the bootstrap's tests name it.
FAILURE_TAG = names.BOOTSTRAP_FAILURE_TAG

# The bootstrap's waits come from gpucluster.bootstrap.boot_budget; these names are kept for callers.
_WAITS = boot_budget.shell_values()
APT_LOCK_TIMEOUT_SECONDS = _WAITS["APT_LOCK_TIMEOUT"]
NVME_TIMEOUT_SECONDS = _WAITS["NVME_TIMEOUT"]
CONTROLLER_TIMEOUT_SECONDS = _WAITS["CONTROLLER_TIMEOUT"]
REGISTER_TIMEOUT_SECONDS = _WAITS["REGISTER_TIMEOUT"]
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
)
# slurmctld starts only while it holds a lock in StateSaveLocation on EFS, so two heads
# (CloudFormation starts a replacement before it deletes the old one) never write one
# state. A dead head's lock goes when the EFS server drops its NFSv4 lease; a live one
# stops within this wait because CloudFormation deletes it after the new one is created.
SLURMCTLD_LOCK_WAIT_SECONDS = _WAITS["SLURMCTLD_LOCK_WAIT"]
# The head's bootstrap waits for the lock and then for slurmctld to read its state.
SLURMCTLD_START_TIMEOUT_SECONDS = _WAITS["SLURMCTLD_START_TIMEOUT"]
# flock's exit status when the wait ran out, so the journal says which way it failed.
SLURMCTLD_LOCK_BUSY_EXIT = 75


# FSx for Lustre guide, "Configuring EFA clients": 8 EFA interfaces on p5/p5e/p5en/p6-b200
# (16 on p6-b300), 2 on other multi-card instances, 1 on single-card ones; each counts
# against the file system's 1024 EFA connections.
LUSTRE_EFA_LARGE = 8
LUSTRE_EFA_BY_TYPE = {"p6-b300.48xlarge": 16}


@dataclass(frozen=True)
class GroupSettings:
    name: str
    slurmd_conf: str
    lustre_efa_interfaces: int
    nvswitch: bool


@dataclass(frozen=True)
class Agents:
    code: dict[str, str]
    installed: dict[str, str]
    timers: list[str]


def head_agents(cfg: ClusterConfig, node: NodeLayout = NODE_LAYOUT) -> Agents:
    """The agents' code (bundle paths), what the head installs (absolute paths), the timers it enables."""
    code = {f"agents/{path.name}": path.read_text() for path in sorted(AGENT_SOURCES.glob("*.py"))}
    units = sorted(
        path.name.removesuffix(".j2")
        for pattern in ("*.service.j2", "*.timer.j2")
        for path in SYSTEMD_TEMPLATES.glob(pattern)
    )
    installed = {f"/etc/systemd/system/{unit}": render(f"systemd/{unit}.j2", node=node) for unit in units}
    installed[node.agent_env_file] = render("systemd/agents.env.j2", cfg=cfg)
    return Agents(code=code, installed=installed, timers=[unit for unit in units if unit.endswith(".timer")])


def lustre_efa_interfaces(cfg: ClusterConfig, group: ComputeGroupConfig) -> int:
    """How many EFA devices LNet uses for FSx on nodes of `group`; 0 means TCP only."""
    fsx = cfg.storage.fsx_lustre
    if fsx is None or not fsx.efa or not group.efa:
        return 0
    available = efa_count(group.instance)
    if group.instance_type in LUSTRE_EFA_BY_TYPE:
        return min(available, LUSTRE_EFA_BY_TYPE[group.instance_type])
    if available >= LUSTRE_EFA_LARGE:
        return LUSTRE_EFA_LARGE
    return min(available, 2)


def group_settings(cfg: ClusterConfig) -> list[GroupSettings]:
    return [
        GroupSettings(
            name=group.name,
            slurmd_conf=slurm_conf.slurmd_conf_line(cfg, group),
            lustre_efa_interfaces=lustre_efa_interfaces(cfg, group),
            nvswitch=group.instance.nvswitch,
        )
        for group in cfg.compute_groups
    ]


def _role_tree(role: str, files: dict[str, str]) -> dict[str, str]:
    """Bundle paths of files a role installs at their absolute paths."""
    for path in files:
        if not path.startswith("/"):
            raise ValueError(f"{role}: install path {path!r} is not absolute")
    return {f"files/{role}{path}": text for path, text in files.items()}


def _cluster_conf(
    cfg: ClusterConfig,
    site: SlurmSite,
    controller_files: list[str],
    node_slurm_files: list[str],
    agent_files: list[str],
    agent_units: list[str],
    job_files: list[str],
    lib_files: list[str],
    slurm: NodeBuild,
) -> str:
    fsx = cfg.storage.fsx_lustre
    return render(
        "userdata/conf/cluster.sh.j2",
        cfg=cfg,
        site=site,
        param_munge_secret_arn=names.storage_parameter(cfg, "munge_secret_arn"),
        param_log_agent_config=names.log_agent_config_parameter(cfg),
        param_head_image=names.head_image_parameter(cfg),
        cw_agent_ctl=node_logs.AGENT_CTL,
        cw_agent=node_logs.CLOUDWATCH_AGENT,
        storage_path=names.storage_parameter_path(cfg),
        param_efs_id=names.storage_parameter(cfg, "efs_id"),
        param_fsx_dns_name=names.storage_parameter(cfg, "fsx_dns_name"),
        param_fsx_mount_name=names.storage_parameter(cfg, "fsx_mount_name"),
        fsx_mount_point=fsx.mount_point if fsx is not None else "",
        lustre_repo=lustre_client.repository(cfg),
        controller_hostname=slurm_conf.controller_hostname(cfg, site),
        conf_server=slurm_conf.conf_server(cfg, site),
        controller_files=controller_files,
        node_slurm_files=node_slurm_files,
        agent_files=agent_files,
        agent_units=agent_units,
        job_files=job_files,
        lib_files=lib_files,
        image_dir=names.image_dir(cfg),
        compute_node_name=names.COMPUTE_NODE_NAME_FORMAT.format(group="${1}", instance_id="${2}"),
        lifecycle_hook=names.LAUNCH_LIFECYCLE_HOOK,
        bootstrap_log=node_logs.BOOTSTRAP_LOG,
        failure_tag=FAILURE_TAG,
        waits=_WAITS,
        node=NODE_LAYOUT,
        bundle_parameter=names.bundle_parameter(cfg),
        nvme_mount=NVME_MOUNT,
        fabric_manager_unit=health_probes.FABRIC_MANAGER_UNIT,
        slurmctld_restart_keys=SLURMCTLD_RESTART_KEYS,
        slurmctld_lock_busy_exit=SLURMCTLD_LOCK_BUSY_EXIT,
        kernel_hold=KERNEL_HOLD_PACKAGES,
        unattended_blacklist=UNATTENDED_BLACKLIST,
        distribution_slurm=DISTRIBUTION_SLURM_PACKAGES,
        head_packages=HEAD_PACKAGES,
        login_packages=(*BASE_PACKAGES, *NODE_TOOLS, *BUILD_PACKAGES),
        compute_packages=(*BASE_PACKAGES, *NODE_TOOLS, *COMPUTE_TOOLS, *BUILD_PACKAGES),
        enroot=enroot_downloads(cfg),
        enroot_dependencies=ENROOT_DEPENDENCIES,
        enroot_hooks=ENROOT_HOOKS,
        compute_enroot=COMPUTE_ENROOT,
        login_enroot=LOGIN_ENROOT,
        pyxis=pyxis_download(cfg),
        slurm=slurm,
        slurm_source_key=names.slurm_source_object_key(slurm.sha256),
        groups=group_settings(cfg),
        ssh_adoption=ssh_adoption.bootstrap_settings(cfg),
    )


def _static_sources() -> dict[str, str]:
    return {
        str(path.relative_to(BUNDLE_SOURCES)): path.read_text()
        for path in sorted(BUNDLE_SOURCES.rglob("*.sh"))
    }


def bundle_files(
    cfg: ClusterConfig, site: SlurmSite | None = None, slurm: NodeBuild | None = None
) -> dict[str, str]:
    """Every file of the bootstrap bundle, keyed by its path inside the bundle.

    `site` is production by default; the tests pass one whose health check finds their
    stub commands, as gpucluster.slurm.conf's own tests do. `slurm` is the pinned build by
    default; the tests pass one whose source is their small stand-in.
    """
    site = site or SlurmSite()
    controller = slurm_conf.render_slurm_files(cfg, site).by_path(site)
    # What slurmd and srun read locally although the controller serves the rest.
    node_slurm = slurm_conf.node_local_files(cfg, site)
    agents = head_agents(cfg)
    # The jobs users submit from a login node: validation, then training.
    jobs = {**validation_jobs.job_files(cfg), **torchrun_files(cfg)}
    # Every group's nodes keep the same paths; gpu-env.sh's content is the group's own.
    lib = {group.name: node_lib_files(cfg, group) for group in cfg.compute_groups}
    files = {**_static_sources(), **agents.code}
    files["conf/cluster.sh"] = _cluster_conf(
        cfg,
        site,
        sorted(controller),
        sorted(node_slurm),
        sorted(agents.installed),
        agents.timers,
        sorted(jobs),
        sorted(next(iter(lib.values()))),
        slurm or NodeBuild(),
    )
    files.update(_role_tree("head", {**controller, **agents.installed}))
    files.update(
        _role_tree(
            "login",
            {"/etc/enroot/enroot.conf": enroot_conf(cfg, "login", LOGIN_ENROOT), **node_slurm, **jobs},
        )
    )
    for group in cfg.compute_groups:
        files.update(
            _role_tree(
                f"compute-{group.name}",
                {
                    site.healthcheck_program: slurm_conf.render_healthcheck(cfg, group, site),
                    "/etc/enroot/enroot.conf": enroot_conf(
                        cfg, f"compute group {group.name}", COMPUTE_ENROOT
                    ),
                    **node_slurm,
                    **lib[group.name],
                    **ssh_adoption.adoption_files(cfg),
                },
            )
        )
    return files

"""A compute node's own Slurm files: its `slurmd -Z --conf` line and its health check.

Compute nodes register as dynamic nodes, each passing the line for its group; the
health check runs as slurmd's HealthCheckProgram and, with --pre-join, in the
bootstrap before the node joins.
"""

from __future__ import annotations

from gpucluster import dcgm, names
from gpucluster.agents import health_reasons
from gpucluster.agents.ec2_topology import DESCRIBED_TYPES, FLAT_SWITCH, ROOT_SWITCH, topology_unit
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.slurm.health_probes import FABRIC_MANAGER_UNIT, KILL_GRACE_SECONDS
from gpucluster.slurm.partitions import real_memory_mib
from gpucluster.slurm.site import SlurmSite

TEMPLATE_DIR = "slurm"


def node_name(group: str, instance_id: str) -> str:
    """The Slurm node name of an instance (names.compute_node_name), stable for its lifetime."""
    return names.compute_node_name(group, instance_id)


def gres(group: ResolvedGroup) -> str:
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
    check_member(resolved, group)
    instance = group.instance
    features = f"{group.feature},{instance.name}"
    line = f"Gres={gres(group)} Feature={features} RealMemory={real_memory_mib(group)}"
    if instance.gpu_sockets is None:
        return line
    layout = instance.gpu_sockets.layout
    return (
        f"{line} Sockets={layout.sockets} CoresPerSocket={layout.cores_per_socket} "
        f"ThreadsPerCore={layout.threads_per_core}"
    )


# What a node of a type EC2 describes puts before its network nodes in its `Topology=`.
TOPOLOGY_ROOT_UNIT = topology_unit((ROOT_SWITCH,))


def registration_topology(group: ResolvedGroup) -> str:
    """The `Topology=` a node of `group` registers with when it needs no EC2 call: the flat
    default for a type DescribeInstanceTopology does not describe; "" for a described type,
    whose node asks EC2 for its own network nodes (lib/slurm.sh, place_in_topology)."""
    if group.instance.name in DESCRIBED_TYPES:
        return ""
    return topology_unit((ROOT_SWITCH, FLAT_SWITCH))


def check_member(resolved: ResolvedCluster, group: ResolvedGroup) -> None:
    if group not in resolved.groups:
        raise ValueError(f"compute group {group.name} is not part of cluster {resolved.name}")


def required_mounts(resolved: ResolvedCluster, site: SlurmSite = SlurmSite()) -> list[str]:
    mounts = ["/home"]
    if resolved.fsx_lustre is not None:
        mounts.append(resolved.fsx_lustre.mount_point)
    return [f"{site.mount_root}{mount}" for mount in mounts]


def render_healthcheck(resolved: ResolvedCluster, group: ResolvedGroup, site: SlurmSite = SlurmSite()) -> str:
    """The HealthCheckProgram for nodes of `group`, also its Prolog (--prolog) and run by the
    bootstrap with --pre-join, where it adds DCGM's diagnostic at health.dcgm_level_at_join."""
    check_member(resolved, group)
    instance = group.instance
    mounts = required_mounts(resolved, site)
    site.probe_timeouts.check_budget(len(mounts))
    site.probe_timeouts.check_prolog_budget()
    level = resolved.health.dcgm_level_at_join
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
        reason_prefix=health_reasons.HEALTHCHECK,
        prolog_reason_prefix=health_reasons.PROLOG,
        reason_separator=health_reasons.SEPARATOR,
        kill_grace=KILL_GRACE_SECONDS,
        munge_socket=site.munge_socket,
        tool_path=site.healthcheck_path,
        node_hosts_program=site.node_hosts_program,
        slurm_conf=site.healthcheck_slurm_conf,
        dcgm_join_level=level,
        dcgm_join_bound=dcgm.bounds_by_level(site.dcgm_bound_seconds).get(level, 0),
        dcgm_reason_prefix=health_reasons.DCGM,
        dcgm_failed_tests_jq=dcgm.FAILED_TESTS_JQ,
    )

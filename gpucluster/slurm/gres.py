"""gres.conf's GPU lines, bound to their cores where that is verified and safe.

Dynamic node names are not known ahead of time, so no line carries NodeName and every slurmd
reads every line: a node registered with `--conf "Gres=gpu:<type>:<N>"` takes the first N
files of its type's lines and ignores the other types' lines ("Ignoring extra GRES"). But it
still converts every line's Cores= to its own CPUs, and a range past its cores is an error
("xcpuinfo_abs_to_mac: failed", "Invalid GRES data for gpu, Cores=48-95": `slurmd -G` on
22.05.8, for a line of its own type and of another type alike). So a GPU type is bound only
when every instance type that has it shares one verified layout (cpu_topology.VERIFIED), and
its ranges fit within the cores of every compute instance type in the cluster; otherwise its
line has no Cores= and a comment says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from gpucluster.catalog import InstanceType
from gpucluster.config import ClusterConfig
from gpucluster.cpu_topology import GpuSockets


@dataclass(frozen=True)
class GresLine:
    gpu_type: str
    files: str
    # Abstract core range "first-last", or None: any core may use these GPUs.
    cores: str | None = None


@dataclass(frozen=True)
class GresConf:
    lines: list[GresLine]
    # One sentence per GPU type left unbound, rendered as a comment.
    unbound: list[str]


def _instances_by_gpu_type(cfg: ClusterConfig) -> dict[str, list[InstanceType]]:
    found: dict[str, list[InstanceType]] = {}
    for group in cfg.compute_groups:
        instances = found.setdefault(group.instance.slurm_gpu_type, [])
        if group.instance not in instances:
            instances.append(group.instance)
    return found


def _names(instances: list[InstanceType]) -> str:
    return " and ".join(f"{i.name} ({i.cores} cores)" for i in instances)


def _why_unbound(
    gpu_type: str, instances: list[InstanceType], all_instances: list[InstanceType]
) -> str | None:
    """Why `gpu_type` may not be bound to cores in this cluster, or None when it may."""
    if len({i.cores for i in instances}) > 1:
        return (
            f"gpu:{gpu_type} is not bound to cores: {_names(instances)} share it, and one line "
            "without NodeName cannot name cores that both have"
        )
    missing = [i.name for i in instances if i.gpu_sockets is None]
    if missing:
        return (
            f"gpu:{gpu_type} is not bound to cores: no public record of {' and '.join(missing)}'s "
            "GPU-to-socket layout (gpucluster/cpu_topology.py)"
        )
    if len({i.gpu_sockets for i in instances}) > 1:
        return (
            f"gpu:{gpu_type} is not bound to cores: {' and '.join(i.name for i in instances)} share it "
            "with different GPU-to-socket layouts"
        )
    topology = instances[0].gpu_sockets
    assert topology is not None
    smaller = [i for i in all_instances if i.cores < topology.layout.cores]
    if smaller:
        return (
            f"gpu:{gpu_type} is not bound to cores: its Cores= reach core {topology.layout.cores - 1}, "
            f"past the cores of {_names(smaller)}, whose slurmd reads this file too"
        )
    return None


def _bound_lines(gpu_type: str, topology: GpuSockets, prefix: str) -> list[GresLine]:
    """One line per run of consecutive GPUs on one socket, with that socket's cores."""
    lines = []
    start = 0
    for socket, run in groupby(topology.gpu_socket):
        count = len(list(run))
        first, last = topology.core_range(socket)
        lines.append(GresLine(gpu_type, f"{prefix}[{start}-{start + count - 1}]", f"{first}-{last}"))
        start += count
    return lines


def gres_conf(cfg: ClusterConfig, gpu_device_prefix: str) -> GresConf:
    """The GPU lines of gres.conf: per GPU type, as many devices as its largest node has."""
    by_type = _instances_by_gpu_type(cfg)
    all_instances = [i for instances in by_type.values() for i in instances]
    lines: list[GresLine] = []
    unbound: list[str] = []
    for gpu_type, instances in by_type.items():
        why = _why_unbound(gpu_type, instances, all_instances)
        topology = instances[0].gpu_sockets
        if why is None and topology is not None:
            lines.extend(_bound_lines(gpu_type, topology, gpu_device_prefix))
            continue
        if why is not None:
            unbound.append(why)
        count = max(i.gpu_count for i in instances)
        lines.append(GresLine(gpu_type, f"{gpu_device_prefix}[0-{count - 1}]"))
    return GresConf(lines, unbound)

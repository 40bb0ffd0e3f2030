"""slurm.conf's partitions: one per compute group and the spanning `all` partition, with
their per-GPU defaults and time limits.

Every partition has a DefaultTime and a bounded MaxTime. A Capacity Block group's
partition carries a MAINT reservation over the block's last minutes from the moment
the capacity controller sees the block (gpucluster/agents/maintenance.py); a job whose
limit is INFINITE overlaps it and would never start, so no limit here is INFINITE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpucluster.config.slurm_time import format_minutes
from gpucluster.resolved import ResolvedCluster, ResolvedGroup

# ParallelCluster schedules 95 % of EC2's nominal memory by default; the rest covers
# what the kernel never shows in MemTotal (firmware and kernel reservations, about
# 1-2 % on these sizes) and the OS, slurmd, Lustre client and EFA/NCCL pinned buffers.
# A node whose MemTotal is below its RealMemory is drained as "Low RealMemory", so
# erring low costs a little schedulable memory while erring high loses the node.
MEMORY_RESERVE_FRACTION = 0.05

# The partition spanning every group. It cannot be called "default": Slurm reads
# `PartitionName=DEFAULT` (any case) as the template for the partitions that follow.
SPANNING_PARTITION = "all"


@dataclass(frozen=True)
class Partition:
    name: str
    nodesets: tuple[str, ...]
    default: bool
    def_cpu_per_gpu: int
    def_mem_per_gpu: int
    default_time_minutes: int
    max_time_minutes: int

    @property
    def default_time(self) -> str:
        return format_minutes(self.default_time_minutes)

    @property
    def max_time(self) -> str:
        return format_minutes(self.max_time_minutes)


def real_memory_mib(group: ResolvedGroup) -> int:
    nominal = group.instance.memory_mib
    return nominal - math.ceil(nominal * MEMORY_RESERVE_FRACTION)


def nodeset(group: ResolvedGroup) -> str:
    return f"ns_{group.name}"


def _per_gpu(group: ResolvedGroup) -> tuple[int, int]:
    gpus = group.instance.gpu_count
    return group.instance.vcpus // gpus, real_memory_mib(group) // gpus


def partitions(resolved: ResolvedCluster) -> list[Partition]:
    parts = []
    for group in resolved.groups:
        cpus, mem = _per_gpu(group)
        parts.append(
            Partition(
                group.partition,
                (nodeset(group),),
                False,
                cpus,
                mem,
                group.default_time_minutes,
                group.max_time_minutes,
            )
        )
    # The spanning partition takes the smallest per-GPU share so a default job fits any
    # group, and the smallest limits so a job it accepts can start on any member: a job
    # longer than a member's block would wait behind that block's end reservation.
    max_time = min(p.max_time_minutes for p in parts)
    parts.append(
        Partition(
            SPANNING_PARTITION,
            tuple(nodeset(group) for group in resolved.groups),
            True,
            min(p.def_cpu_per_gpu for p in parts),
            min(p.def_mem_per_gpu for p in parts),
            min(min(p.default_time_minutes for p in parts), max_time),
            max_time,
        )
    )
    return parts

"""One group's job as the bundle renders it, for tests that hold a config and one of its groups."""

from __future__ import annotations

from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.jobs.validation import render_job
from gpucluster.launch.torchrun import render_torchrun
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT


def job_of(
    cfg: ClusterConfig, group: ComputeGroupConfig, job: str, lib_dir: str = NODE_LAYOUT.lib_dir
) -> str:
    resolved = resolve(cfg)
    return render_job(resolved, resolved.group(group.name), job, lib_dir)


def torchrun_of(cfg: ClusterConfig, group: ComputeGroupConfig, lib_dir: str = NODE_LAYOUT.lib_dir) -> str:
    resolved = resolve(cfg)
    return render_torchrun(resolved, resolved.group(group.name), lib_dir)

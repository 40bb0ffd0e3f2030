"""What `gpucluster top` prints: the cluster's Slurm and GPU summary, a row per node, and
the running jobs holding the most idle GPUs, all from the metrics the collectors publish."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from gpucluster.agents import metric_names as m
from gpucluster.monitor.readings import Plain, grouped, plain
from gpucluster.tables import CliTable, table

WORST_JOBS = 10


@dataclass(frozen=True)
class TopView:
    summary: CliTable
    nodes: CliTable
    jobs: CliTable


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.0f}{unit}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e9:.2f} GB/s"


def top(client: Any, cluster: str, region: str, now: datetime) -> TopView:
    ns = m.namespace(cluster)
    wanted = [
        *(Plain(f"nodes_{state}", m.SLURM_NODES, ((m.STATE, state),)) for state in m.NODE_STATES),
        Plain("gpus_total", m.SLURM_GPUS_TOTAL),
        Plain("gpus_allocated", m.SLURM_GPUS_ALLOCATED),
        Plain("gpus_idle", m.SLURM_GPUS_IDLE_ALLOCATED),
        Plain("jobs_running", m.SLURM_JOBS_RUNNING),
        Plain("jobs_pending", m.SLURM_JOBS_PENDING),
    ]
    values = plain(client, region, ns, wanted, now)
    nodes_line = ", ".join(f"{_number(values.get(f'nodes_{state}'))} {state}" for state in m.NODE_STATES)
    summary = table(
        f"cluster {cluster} ({region})",
        ("what", "now"),
        [
            ("nodes", nodes_line),
            (
                "GPUs",
                f"{_number(values.get('gpus_allocated'))} of {_number(values.get('gpus_total'))} "
                f"allocated, {_number(values.get('gpus_idle'))} of them idle",
            ),
            (
                "jobs",
                f"{_number(values.get('jobs_running'))} running, "
                f"{_number(values.get('jobs_pending'))} pending",
            ),
        ],
    )
    use = grouped(client, region, m.insights(ns, m.GPU_UTILIZATION, "AVG", m.NODE, order="ASC"), now)
    xids = grouped(client, region, m.insights(ns, m.GPU_XID_ERRORS, "SUM", m.NODE), now)
    tx = grouped(client, region, m.insights(ns, m.EFA_TX_BYTES, "SUM", m.NODE), now)
    rx = grouped(client, region, m.insights(ns, m.EFA_RX_BYTES, "SUM", m.NODE), now)
    nodes = table(
        "nodes (lowest GPU use first)",
        ("node", "GPU use", "Xid errors", "EFA tx", "EFA rx"),
        [
            (
                node,
                _number(use.get(node), "%"),
                _number(xids.get(node)),
                _rate(tx.get(node)),
                _rate(rx.get(node)),
            )
            for node in sorted(set(use) | set(xids) | set(tx) | set(rx), key=lambda n: (use.get(n, 101.0), n))
        ],
    )
    idle = grouped(client, region, m.insights(ns, m.JOB_IDLE_GPUS, "MAX", m.JOB, limit=WORST_JOBS), now)
    job_use = grouped(client, region, m.insights(ns, m.JOB_GPU_UTILIZATION, "AVG", m.JOB), now)
    worst = sorted(idle, key=lambda job: (-idle[job], job_use.get(job, 0.0), job))[:WORST_JOBS]
    jobs = table(
        "jobs with the most idle GPUs",
        ("job", "idle GPUs", "GPU use"),
        [(job, _number(idle[job]), _number(job_use.get(job), "%")) for job in worst if idle[job] > 0],
    )
    return TopView(summary, nodes, jobs)

"""The cluster dashboard's widgets as CloudWatch dashboard-body JSON, built from metric_names.

Nodes are dynamic (Auto Scaling replaces them, each is named after its instance), so
per-node and per-GPU widgets select metrics by schema rather than listing them, with
Metrics Insights (`SELECT ... FROM SCHEMA(...) GROUP BY ...`): one line per node or job,
or one for the fleet. Every metric a widget names comes from a metric_names.Metric,
so a widget cannot read a name no collector publishes (tests/stacks/test_monitoring_stack.py
checks the rendered body too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpucluster.agents import metric_names as m

Widget = dict[str, Any]
# What FSx for Lustre publishes by itself (FSx for Lustre user guide, "Monitoring with CloudWatch").
FSX_NAMESPACE = "AWS/FSx"
FSX_DIMENSION = "FileSystemId"
FSX_FREE = "FreeDataStorageCapacity"
WIDTH = 24  # the dashboard grid's width


def expression(text: str, label: str, id: str) -> list[Any]:
    return [{"expression": text, "label": label, "id": id}]


def metric(namespace: str, spec: m.Metric, dimensions: dict[str, str], stat: str, label: str) -> list[Any]:
    """One explicit metric: namespace, name, then dimension name/value pairs."""
    if tuple(dimensions) != spec.dimensions:
        raise ValueError(f"{spec.name} has dimensions {spec.dimensions}, not {tuple(dimensions)}")
    pairs = [part for item in dimensions.items() for part in item]
    return [namespace, spec.name, *pairs, {"stat": stat, "label": label}]


@dataclass(frozen=True)
class DashboardInputs:
    namespace: str
    region: str
    # Compute groups on Capacity Blocks: one "minutes left" figure each.
    block_groups: tuple[str, ...]
    # The FSx for Lustre file system's id (a token), None without one.
    fsx_id: str | None


def graph(title: str, metrics: Sequence[list[Any]], region: str, **extra: Any) -> Widget:
    return {
        "type": "metric",
        "properties": {
            "title": title,
            "region": region,
            "period": m.PERIOD_SECONDS,
            "view": "timeSeries",
            "metrics": list(metrics),
            **extra,
        },
    }


def widgets(inputs: DashboardInputs) -> list[Widget]:
    ns, region = inputs.namespace, inputs.region

    def query(title: str, text: str, width: int = 12, **extra: Any) -> tuple[Widget, int]:
        # A widget holds one Metrics Insights query (CloudWatch's limit per GetMetricData).
        return graph(title, [expression(text, "", "q")], region, **extra), width

    found: list[tuple[Widget, int]] = [
        query(
            "Fleet GPU utilization (%), mean of every GPU",
            m.insights(ns, m.GPU_UTILIZATION, "AVG"),
            yAxis={"left": {"min": 0, "max": 100}},
        ),
        (
            graph(
                "GPUs: total, allocated, allocated but idle",
                [
                    metric(ns, m.SLURM_GPUS_TOTAL, {}, "Maximum", "total"),
                    metric(ns, m.SLURM_GPUS_ALLOCATED, {}, "Maximum", "allocated"),
                    metric(ns, m.SLURM_GPUS_IDLE_ALLOCATED, {}, "Maximum", "allocated, idle"),
                ],
                region,
            ),
            12,
        ),
        query(
            "Nodes: mean GPU utilization (%), lowest first",
            m.insights(ns, m.GPU_UTILIZATION, "AVG", group_by=m.NODE, order="ASC"),
            view="table",
        ),
        query(
            "Jobs holding the most idle GPUs",
            m.insights(ns, m.JOB_IDLE_GPUS, "MAX", group_by=m.JOB, limit=10),
            view="table",
        ),
        query("EFA transmit per node (bytes/s)", m.insights(ns, m.EFA_TX_BYTES, "SUM", group_by=m.NODE)),
        query("EFA receive per node (bytes/s)", m.insights(ns, m.EFA_RX_BYTES, "SUM", group_by=m.NODE)),
        query("GPU Xid errors per node", m.insights(ns, m.GPU_XID_ERRORS, "SUM", group_by=m.NODE), 6),
        query(
            "GPU uncorrected ECC errors per node", m.insights(ns, m.GPU_ECC_ERRORS, "MAX", group_by=m.NODE), 6
        ),
        query(
            "EFA retransmitted packets per node", m.insights(ns, m.EFA_RETRANSMITS, "SUM", group_by=m.NODE), 6
        ),
        query("EFA errors per node", m.insights(ns, m.EFA_ERRORS, "SUM", group_by=m.NODE), 6),
        (
            graph(
                "Slurm nodes by state",
                [metric(ns, m.SLURM_NODES, {m.STATE: state}, "Maximum", state) for state in m.NODE_STATES],
                region,
                stacked=True,
            ),
            12,
        ),
        (
            graph(
                "Slurm jobs",
                [
                    metric(ns, m.SLURM_JOBS_RUNNING, {}, "Maximum", "running"),
                    metric(ns, m.SLURM_JOBS_PENDING, {}, "Maximum", "pending"),
                ],
                region,
            ),
            12,
        ),
    ]
    if inputs.fsx_id is not None:
        fsx = [FSX_DIMENSION, inputs.fsx_id]
        found.append(
            (
                graph(
                    "FSx for Lustre: free capacity (bytes) and throughput (bytes per minute)",
                    [
                        [FSX_NAMESPACE, FSX_FREE, *fsx, {"stat": "Minimum", "label": "free"}],
                        [
                            FSX_NAMESPACE,
                            "DataReadBytes",
                            *fsx,
                            {"stat": "Sum", "label": "read", "yAxis": "right"},
                        ],
                        [
                            FSX_NAMESPACE,
                            "DataWriteBytes",
                            *fsx,
                            {"stat": "Sum", "label": "written", "yAxis": "right"},
                        ],
                    ],
                    region,
                ),
                12,
            )
        )
    if inputs.block_groups:
        found.append(
            (
                graph(
                    "Capacity Block: minutes left",
                    [
                        metric(ns, m.CAPACITY_BLOCK_MINUTES_LEFT, {m.GROUP: group}, "Minimum", group)
                        for group in inputs.block_groups
                    ],
                    region,
                    view="singleValue",
                ),
                12,
            )
        )
    return _laid_out(found)


def _laid_out(widgets: list[tuple[Widget, int]], height: int = 6) -> list[Widget]:
    """Left to right, wrapping at the grid's width."""
    x = y = 0
    placed = []
    for widget, width in widgets:
        if x + width > WIDTH:
            x, y = 0, y + height
        placed.append({**widget, "x": x, "y": y, "width": width, "height": height})
        x += width
    return placed

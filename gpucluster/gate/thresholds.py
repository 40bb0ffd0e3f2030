"""The bus bandwidth a healthy cluster reaches, from published nccl-tests runs.

The figures live in gpucluster/data/nccl_thresholds.json, each with the page it came
from. A run passes when its large-message peak reaches figure x min-fraction; the
user can replace the figure with `--min-busbw GBPS` (an absolute floor).

Why 0.8 by default: the published p5 runs agree within ~1.3% (487.09 GB/s in the
awsome-distributed-training README, 480.87 GB/s in the EKS Blueprints pattern), so
run-to-run and version noise is a few percent; a fallback to TCP sockets or a node
without GPUDirect RDMA loses most of the bandwidth, and a degraded p4d run (43.8
of 78.3 GB/s) sits at 0.56. 0.8 leaves room for the first and catches the rest.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Literal

from gpucluster.gate.model import Frozen

DEFAULT_MIN_FRACTION = 0.8
# Gate on the large-message peak, not "# Avg bus bandwidth", which averages in the
# latency-bound small messages.
LARGE_MESSAGE_BYTES = 1 << 30


class Figure(Frozen):
    collective: str
    instance_types: tuple[str, ...]
    measured_on: str
    nodes: int
    busbw_gbps: float
    message_bytes: int
    source: str
    note: str


class Threshold(Frozen):
    """The floor a run's peak busbw is held to, and where it came from."""

    floor_gbps: float
    origin: Literal["published", "--min-busbw"]
    figure: Figure | None = None
    fraction: float | None = None

    def describe(self) -> str:
        if self.figure is None:
            return f"{self.floor_gbps:.2f} GB/s (--min-busbw)"
        return (
            f"{self.floor_gbps:.2f} GB/s = {self.fraction:g} x {self.figure.busbw_gbps:.2f} GB/s published "
            f"for {self.figure.nodes} x {self.figure.measured_on} ({self.figure.source})"
        )


@cache
def figures() -> tuple[Figure, ...]:
    raw = json.loads(resources.files("gpucluster").joinpath("data/nccl_thresholds.json").read_text())
    return tuple(Figure.model_validate(entry) for entry in raw["figures"])


def published(collective: str, instance_type: str, nodes: int) -> Figure | None:
    for figure in figures():
        if (
            figure.collective == collective
            and instance_type in figure.instance_types
            and figure.nodes == nodes
        ):
            return figure
    return None


def published_node_counts(collective: str, instance_type: str) -> list[int]:
    return sorted(
        {
            figure.nodes
            for figure in figures()
            if figure.collective == collective and instance_type in figure.instance_types
        }
    )

"""nccl-tests logs in the formats real runs print, built from a few parameters.

The gate's edge cases (a TCP fallback, wrong results, a killed run, JSON, pairwise
runs with one bad node) need logs no public post shows whole; these are written the
way nccl-tests 2.19 and NCCL 2.2x print them: the `nThread` line, the device list,
NCCL INFO lines per host (aws-ofi-nccl's `Selected provider is efa, fabric is
efa-direct (found N nics)` and `Using network Libfabric`, or `NET/Socket` and
`Using network Socket`), the table, the out-of-bounds and average lines.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

from gpucluster.job_output import pair_line

GiB = 1 << 30
# nccl-tests 2.19's three header lines, column for column.
_TITLES = "#" + " " * 62 + "out-of-place" + " " * 23 + "in-place"
_COLUMNS = (
    "#       size         count      type   redop    root"
    "     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong"
)
_UNITS = (
    "#        (B)    (elements)                               (us)"
    "  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)"
)


@dataclass
class Spec:
    hosts: tuple[str, ...] = ("gpu-1", "gpu-2")
    gpus_per_node: int = 8
    # Per host: "efa" or "socket"; hosts not named use `network_default`.
    network: dict[str, str] = field(default_factory=dict)
    network_default: str = "efa"
    nics: dict[str, int] = field(default_factory=dict)
    nics_default: int = 32
    peak_busbw: float = 470.0
    collective: str = "all_reduce_perf"
    min_bytes: int = 8
    max_bytes: int = 16 * GiB
    # What nccl-tests lowers maxBytes to when GPU memory is too small for it (src/common.cu
    # prints "# Reducing maxBytes to N due to memory limitation"); None: not lowered.
    memory_max: int | None = None
    # Stop printing rows after this size (a killed run); None prints the whole sweep.
    last_size: int | None = None
    cut_row: bool = False
    summary: bool = True
    wrong: dict[int, int] = field(default_factory=dict)
    out_of_bounds: int = 0
    prefix: Literal["none", "srun", "mpirun"] = "none"
    pair: tuple[int, str, str] | None = None
    info_lines: bool = True

    @property
    def ranks(self) -> int:
        return len(self.hosts) * self.gpus_per_node


def _factor(collective: str, ranks: int) -> float:
    if collective == "all_reduce_perf":
        return 2 * (ranks - 1) / ranks
    return (ranks - 1) / ranks


def sizes(spec: Spec) -> list[int]:
    size, out = spec.min_bytes, []
    largest = spec.max_bytes if spec.memory_max is None else min(spec.max_bytes, spec.memory_max)
    while size <= largest:
        out.append(size)
        size *= 2
    return out


def row_values(spec: Spec, size: int) -> tuple[float, float, float]:
    """time (us), algbw, busbw for one size: busbw rises to the peak as messages grow."""
    busbw = spec.peak_busbw * size / (size + 64 * (1 << 20)) if spec.ranks > 1 else 0.0
    factor = _factor(spec.collective, spec.ranks)
    algbw = busbw / factor if factor else 0.0
    time_us = size / (algbw * 1e3) if algbw else 5.0
    return time_us, algbw, busbw


def row(spec: Spec, size: int) -> str:
    time_us, algbw, busbw = row_values(spec, size)
    wrong = spec.wrong.get(size, 0)
    redop = "sum" if "reduce" in spec.collective else "none"
    half = f"{time_us:8.2f} {algbw:7.2f} {busbw:7.2f} {wrong:7d}"
    return f"{size:12d} {size // 4:13d} {'float':>9} {redop:>7} {-1:7d} {half}  {half}"


def _info(spec: Spec) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    for index, host in enumerate(spec.hosts):
        rank = index * spec.gpus_per_node
        head = f"{host}:{1000 + index}:{1000 + index} [0] NCCL INFO"
        if index == 0:
            lines.append((rank, f"{head} NCCL version 2.23.4+cuda12.4"))
        kind = spec.network.get(host, spec.network_default)
        if kind == "efa":
            nics = spec.nics.get(host, spec.nics_default)
            lines.append((rank, f"{head} NET/OFI Initializing aws-ofi-nccl 1.13.2-aws"))
            lines.append(
                (rank, f"{head} NET/OFI Selected provider is efa, fabric is efa-direct (found {nics} nics)")
            )
            lines.append((rank, f"{head} Using network Libfabric"))
        else:
            lines.append((rank, f"{head} NET/Socket : Using [0]ens32:10.0.0.{index + 1}<0>"))
            lines.append((rank, f"{head} Using network Socket"))
        lines.append(
            (
                rank,
                f"{head} comm 0x5500 rank {rank} nRanks {spec.ranks} nNodes {len(spec.hosts)} "
                f"localRanks {spec.gpus_per_node} localRank 0 MNNVL 0",
            )
        )
    return lines


def _prefixed(spec: Spec, rank: int, text: str) -> str:
    if spec.prefix == "srun":
        return f"{rank}: {text}"
    if spec.prefix == "mpirun":
        return f"[1,{rank}]<stdout>:{text}"
    return text


def text_log(spec: Spec) -> str:
    lines: list[tuple[int, str]] = []
    if spec.pair is not None:
        lines.append((0, pair_line(*spec.pair)))
    lines += [
        (0, "# nccl-tests version 2.19.6 nccl-headers=22304 nccl-library=22304"),
        (0, f"# Collective test starting: {spec.collective}"),
        (
            0,
            f"# nThread 1 nGpus 1 minBytes {spec.min_bytes} maxBytes {spec.max_bytes} step: 2(factor) "
            "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
        ),
        (0, "#"),
        (0, "# Using devices"),
    ]
    for rank in range(spec.ranks):
        host = spec.hosts[rank // spec.gpus_per_node]
        device = rank % spec.gpus_per_node
        lines.append(
            (
                0,
                f"#  Rank {rank:2d} Group  0 Pid {2000 + rank:6d} on {host:>10} device {device:2d} "
                f"[0000:{device + 16:02x}:00] NVIDIA H100 80GB HBM3",
            )
        )
    if spec.memory_max is not None:
        lines += [(0, "#"), (0, f"# Reducing maxBytes to {spec.memory_max} due to memory limitation")]
    if spec.info_lines:
        lines += _info(spec)
    lines += [
        (0, "#"),
        (0, _TITLES),
        (0, _COLUMNS),
        (0, _UNITS),
    ]
    printed = [size for size in sizes(spec) if spec.last_size is None or size <= spec.last_size]
    for index, size in enumerate(printed):
        lines.append((0, row(spec, size)))
        if index == 2 and spec.info_lines:
            # NCCL prints from other ranks while rank 0 prints the table.
            lines.append(
                (spec.gpus_per_node, f"{spec.hosts[-1]}:1001:1009 [3] NCCL INFO Launch mode Parallel")
            )
    if spec.cut_row:
        next_size = printed[-1] * 2 if printed else spec.min_bytes
        lines.append((0, f"{next_size:12d} {next_size // 4:13d}     float     sum"))
    if spec.summary:
        status = "OK" if spec.out_of_bounds == 0 else "FAILED"
        average = sum(row_values(spec, size)[2] for size in printed) / max(1, len(printed))
        lines += [
            (0, f"# Out of bounds values : {spec.out_of_bounds} {status}"),
            (0, f"# Avg bus bandwidth    : {average:.4f}"),
            (0, "#"),
            (0, f"# Collective test concluded: {spec.collective}"),
        ]
    return "\n".join(_prefixed(spec, rank, text) for rank, text in lines) + "\n"


def json_log(spec: Spec) -> str:
    """What `-J FILE.json` writes for the same run (nccl-tests 2.19, "version": 3)."""
    results = []
    for size in sizes(spec):
        time_us, algbw, busbw = row_values(spec, size)
        half = {"time": time_us, "alg_bw": algbw, "bus_bw": busbw, "nwrong": float(spec.wrong.get(size, 0))}
        results.append(
            {
                "size": size,
                "count": size // 4,
                "type": "float",
                "redop": "sum",
                "root": "    -1",
                "out_of_place": half,
                "in_place": dict(half),
                "actual_iterations": 20,
                "experiment_name": "",
            }
        )
    devices = [
        {
            "rank": rank,
            "group": 0,
            "pid": 2000 + rank,
            "hostname": spec.hosts[rank // spec.gpus_per_node],
            "device": rank % spec.gpus_per_node,
            "device_hex": "0000:10:00",
            "device_info": "NVIDIA H100 80GB HBM3",
        }
        for rank in range(spec.ranks)
    ]
    return json.dumps(
        {
            "version": 3,
            "args": [
                f"./build/{spec.collective}",
                "-b",
                "8",
                "-e",
                "16G",
                "-f",
                "2",
                "-g",
                "1",
                "-J",
                "x.json",
            ],
            "nccl_version": 22304,
            "config": {
                "nthreads": 1,
                "ngpus": 1,
                "minimum_bytes": spec.min_bytes,
                "maximum_bytes": spec.max_bytes,
                "step_factor": 2,
                "devices": devices,
            },
            "results": results,
            "out_of_bounds": {
                "count": spec.out_of_bounds,
                "okay": "true" if not spec.out_of_bounds else "false",
            },
            "average_bus_bandwidth": {"bandwidth": 100.0, "okay": "unchecked"},
            "errors": [""],
            "end_time": "2026-12-04 05:00:00",
        }
    )

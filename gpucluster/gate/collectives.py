"""Which collective a run measured, and what its bus-bandwidth factor says about its ranks.

nccl-tests reports busbw = algbw x a factor that depends on the collective and the rank
count n (nccl-tests doc/PERFORMANCE.md): all_reduce 2(n-1)/n; all_gather, reduce_scatter
and alltoall (n-1)/n. A log that names neither its collective nor its ranks still shows
both numbers, so the factor gives n back.
"""

from __future__ import annotations

import re
from pathlib import PurePath

from gpucluster.gate.model import SizeRow

ALL_REDUCE = "all_reduce_perf"
# Spellings in file names, longest first so "all_reduce" is not read as "reduce".
_NAME_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (ALL_REDUCE, re.compile(r"all[_-]?reduce", re.IGNORECASE)),
    ("reduce_scatter_perf", re.compile(r"reduce[_-]?scatter", re.IGNORECASE)),
    ("all_gather_perf", re.compile(r"all[_-]?gather", re.IGNORECASE)),
    ("alltoall_perf", re.compile(r"all[_-]?to[_-]?all", re.IGNORECASE)),
    ("sendrecv_perf", re.compile(r"send[_-]?recv", re.IGNORECASE)),
    ("broadcast_perf", re.compile(r"broadcast", re.IGNORECASE)),
)
_REDUCING_OPS = frozenset({"sum", "prod", "max", "min", "avg"})


def normalize(name: str) -> str:
    """`./build/all_reduce_perf` or `all_reduce_perf_mpi` -> `all_reduce_perf`."""
    base = PurePath(name).name
    base = re.sub(r"_mpi$", "", base)
    return base if base.endswith("_perf") else f"{base}_perf"


def from_file_name(path: str) -> str | None:
    name = PurePath(path).name
    for collective, pattern in _NAME_PATTERNS:
        if pattern.search(name):
            return collective
    return None


def _largest_measured(rows: tuple[SizeRow, ...]) -> SizeRow | None:
    # The largest message has the most significant digits in algbw and busbw.
    measured = [
        row
        for row in rows
        if (row.out_of_place.algbw_gbps or 0) > 0 and (row.out_of_place.busbw_gbps or 0) > 0
    ]
    return max(measured, key=lambda row: row.size_bytes, default=None)


def from_numbers(rows: tuple[SizeRow, ...]) -> str | None:
    """all_reduce is the only reducing collective whose busbw exceeds its algbw."""
    row = _largest_measured(rows)
    if row is None or (row.redop or "").lower() not in _REDUCING_OPS:
        return None
    ratio = (row.out_of_place.busbw_gbps or 0) / (row.out_of_place.algbw_gbps or 1)
    return ALL_REDUCE if ratio > 1.05 else None


def ranks_from_numbers(collective: str | None, rows: tuple[SizeRow, ...]) -> int | None:
    row = _largest_measured(rows)
    if row is None or collective is None:
        return None
    ratio = (row.out_of_place.busbw_gbps or 0) / (row.out_of_place.algbw_gbps or 1)
    if collective == ALL_REDUCE:
        ceiling = 2.0
    elif collective in ("all_gather_perf", "reduce_scatter_perf", "alltoall_perf"):
        ceiling = 1.0
    else:
        return None
    if not 0 < ceiling - ratio < ceiling:
        return None
    estimate = ceiling / (ceiling - ratio)
    # Two printed decimals blur the ratio as n grows; beyond this the guess is not worth having.
    if estimate > 4096:
        return None
    return max(2, round(estimate))

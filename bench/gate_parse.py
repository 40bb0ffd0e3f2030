"""`make bench`'s gate figure: how fast `gpucluster gate` reads and judges a large log.

The log is a real fixture's table and INFO lines, repeated.
The fixture is the p4d log from AWS (tests/fixtures/nccl/INDEX.md): mpirun's
`[1,N]<stdout>:` prefix on every line, NCCL INFO lines from 16 ranks, the old `error`
column. Logs of hundreds of MB come from `-N` cycles (nccl-tests prints the sweep's rows
again each cycle, src/common.cu) with NCCL_DEBUG=INFO lines between them; the copy repeats the INFO lines and
the rows, in that order, until it reaches the size asked for, then ends as the fixture does.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "tests" / "fixtures" / "nccl" / "p4d-2node-allreduce-awsefaeks-readme.txt"
_FOOTER = "# Out of bounds values"


def write_large_log(path: Path, target_bytes: int) -> int:
    """Write the log to `path`; returns its size in bytes (at least `target_bytes`)."""
    lines = FIXTURE.read_text().splitlines(keepends=True)
    header_end = next(i for i, line in enumerate(lines) if "size         count" in line) + 1
    footer = next(i for i, line in enumerate(lines) if _FOOTER in line)
    head, rows, tail = lines[:header_end], lines[header_end:footer], lines[footer:]
    info = "".join(line for line in head if "NCCL INFO" in line)
    cycle = info + "".join(rows)
    body = "".join(head)
    repeats = max(1, (target_bytes - len(body)) // len(cycle) + 1)
    with path.open("w") as out:
        out.write(body)
        for _ in range(repeats):
            out.write(cycle)
        out.write("".join(tail))
    return path.stat().st_size


def time_gate_parse(console: Console, work: Path, megabytes: int, runs: int) -> None:
    """Print the gate's read-and-judge speed on a log of `megabytes` MB, median of `runs`."""
    from gpucluster.catalog import load_catalog
    from gpucluster.gate.decide import Context
    from gpucluster.gate.run import judge_log
    from gpucluster.gate.thresholds import DEFAULT_MIN_FRACTION

    log = work / "large-gate.log"
    size = write_large_log(log, megabytes * 1_000_000)
    context = Context(load_catalog().get("p4d.24xlarge"), DEFAULT_MIN_FRACTION, None)
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(runs):
        started, cpu_started = time.perf_counter(), time.process_time()
        judge_log(log, context)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    table = Table(title=f"gate parse of a {size / 1e6:,.0f} MB log, median of {runs}", title_justify="left")
    for column in ("lines", "wall s", "MB/s", "cpu s", "MB/s (cpu)"):
        table.add_column(column, justify="right")
    lines = sum(1 for _ in log.open("rb"))
    seconds, cpu_seconds = statistics.median(wall), statistics.median(cpu)
    table.add_row(
        f"{lines:,}",
        f"{seconds:.2f}",
        f"{size / 1e6 / seconds:.1f}",
        f"{cpu_seconds:.2f}",
        f"{size / 1e6 / cpu_seconds:.1f}",
    )
    console.print(table)

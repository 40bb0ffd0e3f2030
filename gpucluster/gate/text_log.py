"""Reads an nccl-tests text log: one or more runs, NCCL's INFO lines, the jobs' own lines.

A log may hold several runs (a script that runs several collectives into one file):
a new run starts at nccl-tests' `nThread ...` line, its `Collective test starting`
line, a table header or a pair line once the run before has a table. Lines before the
first run (launcher noise, the pairwise job's pair line) belong to it.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from gpucluster.bad_input import BadInput
from gpucluster.gate import collectives
from gpucluster.gate.lines import numbered_lines
from gpucluster.gate.model import (
    Count,
    Failure,
    NcclRun,
    NodeCheck,
    Origin,
    SizeRow,
    Summary,
    Sweep,
    Versions,
)
from gpucluster.gate.nccl_info import NcclInfo
from gpucluster.gate.rows import header_wrong_column, looks_like_row, parse_row
from gpucluster.job_output import PairHeader, parse_efa_check_line, parse_pair_line
from gpucluster.progress import Meter

_NTHREAD = re.compile(r"\bnThread\s+\d+\s+nGpus\s+\d+\s+minBytes\s+\d+\s+maxBytes\s+(\d{1,18})")
# nccl-tests' run() after the header (src/common.cu): "# Reducing maxBytes to N due to memory limitation".
_REDUCING = re.compile(r"Reducing maxBytes to (\d{1,18}) due to memory limitation")
_STEP = re.compile(r"\bstep:\s*(\d{1,18})\((factor|bytes)\)")
_STARTING = re.compile(r"Collective test starting:\s*(\S+)")
_TESTS_VERSION = re.compile(r"nccl-tests version (\d[\w.]*)")
_DEVICE = re.compile(
    r"\bRank\s+(\d{1,18})\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$"
)
_OUT_OF_BOUNDS = re.compile(r"Out of bounds values\s*:\s*(\d{1,18})")
_AVG_BUSBW = re.compile(r"Avg bus bandwidth\s*:\s*(\S*)")
_FAILURE = re.compile(r"\bTest (?:NCCL |CUDA )?failure\b")
_MAX_FAILURES = 20
# How often (in lines) the parse tells the progress meter where it is.
_PROGRESS_LINES = 1 << 16
_T = TypeVar("_T")


@dataclass
class _Run:
    source: str
    first_line: int
    pair: PairHeader | None = None
    collective: str | None = None
    tests_version: str | None = None
    sweep: Sweep = Sweep()
    header_line: int | None = None
    wrong_column: str | None = None
    rows: list[SizeRow] = field(default_factory=list)
    cut_row_line: int | None = None
    devices: dict[int, str] = field(default_factory=dict)
    gpu_model: str | None = None
    summary: Summary = Summary()
    failures: list[Failure] = field(default_factory=list)
    info: NcclInfo = field(default_factory=NcclInfo)

    @property
    def started(self) -> bool:
        return self.header_line is not None or bool(self.rows)

    @property
    def attempted(self) -> bool:
        """nccl-tests (or the pairwise job) began this run, even if no table followed.

        A run that died before its table (NCCL init failed, a node hung) is a NO-GO to
        report, not an unreadable file; NCCL INFO lines alone are not nccl-tests.
        """
        return (
            self.started
            or self.pair is not None
            or self.sweep.max_bytes is not None
            or self.collective is not None
            or bool(self.failures)
        )

    def feed(self, number: int, line: str) -> None:
        if self._comment(number, line):
            return
        wrong_column = header_wrong_column(line)
        if wrong_column is not None:
            self.header_line, self.wrong_column = number, wrong_column
        elif self.header_line is not None and self.summary.line is None and looks_like_row(line):
            self._row(number, line)

    def _comment(self, number: int, line: str) -> bool:
        """nccl-tests' own lines around the table; True when `line` was one.

        Each pattern is searched only in lines holding its words: most lines of a large
        log are result rows, which hold none of them.
        """
        if "Collective test starting" in line and (found := _STARTING.search(line)):
            self.collective = collectives.normalize(found.group(1))
        elif "nccl-tests version" in line and (found := _TESTS_VERSION.search(line)):
            self.tests_version = found.group(1)
        elif "nThread" in line and (found := _NTHREAD.search(line)):
            step = _STEP.search(line)
            by = step.group(2) if step else None
            self.sweep = Sweep(
                max_bytes=int(found.group(1)),
                step_factor=int(step.group(1)) if step and by == "factor" else None,
                step_bytes=int(step.group(1)) if step and by == "bytes" else None,
            )
        elif "Reducing maxBytes" in line and (found := _REDUCING.search(line)):
            self.sweep = self.sweep.model_copy(
                update={"max_bytes": int(found.group(1)), "asked_max_bytes": self.sweep.max_bytes}
            )
        elif "Rank" in line and (found := _DEVICE.search(line)):
            self.devices[int(found.group(1))] = found.group(2)
            self.gpu_model = self.gpu_model or found.group(3).strip() or None
        elif "Out of bounds" in line and (found := _OUT_OF_BOUNDS.search(line)):
            self.summary = self.summary.model_copy(
                update={"out_of_bounds": int(found.group(1)), "out_of_bounds_line": number}
            )
        elif "Avg bus" in line and (found := _AVG_BUSBW.search(line)):
            self.summary = self.summary.model_copy(
                update={"avg_busbw_gbps": _float(found.group(1)), "line": number}
            )
        elif "failure" in line and _FAILURE.search(line):
            if len(self.failures) < _MAX_FAILURES:
                self.failures.append(Failure(line=number, text=line.strip()[:300]))
        else:
            return False
        return True

    def _row(self, number: int, line: str) -> None:
        if self.cut_row_line is not None:
            raise BadInput(
                self.source,
                f"line {self.cut_row_line}",
                "a result row is cut short in the middle of the table",
                "pass the log as the job wrote it (not an excerpt with lines joined or cut)",
            )
        try:
            row = parse_row(line, number, self.wrong_column)
        except ValueError as exc:
            raise BadInput(
                self.source,
                f"line {number}",
                f"a result row holds a value that is not a number ({exc})",
                "pass the log as nccl-tests printed it",
            ) from None
        if row is None:
            self.cut_row_line = number
        else:
            self.rows.append(row)

    def build(self) -> NcclRun:
        rows = tuple(self.rows)
        collective, collective_from = self._collective(rows)
        hosts = tuple(sorted(set(self.devices.values())))
        nodes = len(hosts) if hosts else self.info.nnodes
        return NcclRun(
            source=self.source,
            first_line=self.first_line,
            kind="text",
            collective=collective,
            collective_from=collective_from,
            versions=Versions(nccl=self.info.version, nccl_tests=self.tests_version),
            ranks=self._ranks(collective, rows),
            nodes=Count(value=nodes, origin="log") if nodes is not None else None,
            hosts=hosts,
            gpu_model=self.gpu_model,
            sweep=self.sweep,
            wrong_column="error" if self.wrong_column == "error" else "#wrong",
            rows=rows,
            networks=self.info.networks(),
            summary=self.summary,
            cut_row_line=self.cut_row_line,
            failures=tuple(self.failures),
            pair=self.pair,
        )

    def _collective(self, rows: tuple[SizeRow, ...]) -> tuple[str | None, Origin | None]:
        if self.collective:
            return self.collective, "log"
        if named := collectives.from_file_name(self.source):
            return named, "file name"
        if derived := collectives.from_numbers(rows):
            return derived, "derived"
        return None, None

    def _ranks(self, collective: str | None, rows: tuple[SizeRow, ...]) -> Count | None:
        if self.devices:
            return Count(value=len(self.devices), origin="log")
        if self.info.nranks is not None:
            return Count(value=self.info.nranks, origin="log")
        derived = collectives.ranks_from_numbers(collective, rows)
        return Count(value=derived, origin="derived") if derived is not None else None


def _float(token: str) -> float | None:
    try:
        value = float(token)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _job_line(parse: Callable[[str], _T | None], line: str) -> _T | None:
    # A number past Python's int digit limit makes the job line's int() raise: not a job line.
    try:
        return parse(line)
    except ValueError:
        return None


def _starts_run(line: str) -> bool:
    return bool(
        ("nThread" in line and _NTHREAD.search(line))
        or ("Collective test starting" in line and _STARTING.search(line))
        or ("size" in line and header_wrong_column(line))
    )


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    # A long table is 10^5 rows of small objects that hold no cycles: the collector's full
    # passes over them took a third of the parse of a 250 MB log (bench/run.py), and
    # reference counting frees them all the same.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def parse_text(source: str, text: str, meter: Meter | None = None) -> tuple[list[NcclRun], list[NodeCheck]]:
    """Every run in the log and every efa-check line; bad input when there is neither.

    `meter` is told the line number reached, of `text.count("\\n") + 1` lines.
    """
    with _cyclic_gc_paused():
        runs, checks, last = _parse(source, text, meter or Meter())
    if not runs and not checks:
        raise BadInput(
            source,
            f"line {last}",
            "no nccl-tests result table (the '#  size  count  type ...' header) and no "
            "gpucluster-efa-check line up to the end of the file",
            "pass the output of an nccl-tests run (all_reduce_perf ...), its -J JSON file, "
            "or the efa-check job's output",
        )
    return runs, checks


def _parse(source: str, text: str, meter: Meter) -> tuple[list[NcclRun], list[NodeCheck], int]:
    runs: list[NcclRun] = []
    checks: list[NodeCheck] = []
    current = _Run(source=source, first_line=1)
    last = 0
    for number, line in numbered_lines(text):
        last = number
        if number % _PROGRESS_LINES == 0:
            meter.update(number)
        # NCCL's own lines (most of a large log) start no run and are no job's line.
        if current.info.feed(number, line):
            continue
        if (check := _job_line(parse_efa_check_line, line)) is not None:
            checks.append(NodeCheck(line=number, result=check))
            continue
        pair = _job_line(parse_pair_line, line)
        if (pair is not None or _starts_run(line)) and current.started:
            runs.append(current.build())
            current = _Run(source=source, first_line=number, pair=current.pair)
        if pair is not None:
            current.pair = pair
            continue
        current.feed(number, line)
    meter.update(last)
    if current.attempted:
        runs.append(current.build())
    return runs, checks, last

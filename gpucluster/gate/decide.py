"""GO or NO-GO for one run, with every reason, never just the first.

A reason is `node_fault` when a bad node explains it (wrong results, a run that died,
a fallback to TCP, missing EFA NICs, low bandwidth): pairwise attribution counts only
those. Reasons the user fixes by running the test differently (one rank, no NCCL INFO
lines, no threshold known) make the run NO-GO but point at no node.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.catalog import InstanceType
from gpucluster.gate import collectives
from gpucluster.gate.model import Count, Frozen, NcclRun, NodeCheck, SizeRow
from gpucluster.gate.thresholds import (
    LARGE_MESSAGE_BYTES,
    Threshold,
    published,
    published_node_counts,
)
from gpucluster.gate.transport import judge_transport


class Reason(Frozen):
    code: str
    text: str
    node_fault: bool
    nodes: tuple[str, ...] = ()


class Peak(Frozen):
    busbw_gbps: float
    size_bytes: int
    line: int


class Verdict(Frozen):
    label: str
    source: str
    line: int
    go: bool
    reasons: tuple[Reason, ...]
    notes: tuple[str, ...] = ()
    run: NcclRun | None = None
    nodes: Count | None = None
    peak: Peak | None = None
    threshold: Threshold | None = None
    efa_checks: tuple[NodeCheck, ...] = ()


@dataclass(frozen=True)
class Context:
    instance: InstanceType | None
    min_fraction: float
    min_busbw: float | None
    # False for a compute group with `efa: false`: NCCL over sockets is what it should use.
    efa_expected: bool = True


def size_text(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


class _Judge:
    def __init__(self, run: NcclRun, context: Context) -> None:
        self.run = run
        self.context = context
        self.reasons: list[Reason] = []
        self.notes: list[str] = []

    def add(self, code: str, text: str, *, node_fault: bool, nodes: tuple[str, ...] = ()) -> None:
        self.reasons.append(Reason(code=code, text=text, node_fault=node_fault, nodes=nodes))

    def results(self) -> None:
        run = self.run
        for failure in run.failures[:3]:
            self.add("test-failed", f"line {failure.line}: {failure.text}", node_fault=True)
        self._lowered()
        stops = self._stops()
        if stops:
            self.add("stopped-early", "the run stopped early: " + "; ".join(stops), node_fault=True)
        wrong = [row for row in run.rows if _wrong(row) > 0]
        if wrong:
            sizes = ", ".join(f"{size_text(row.size_bytes)} (line {row.line})" for row in wrong[:5])
            total = sum(_wrong(row) for row in wrong)
            self.add("wrong-results", f"{total} wrong values at {sizes}", node_fault=True)
        if run.summary.out_of_bounds:
            self.add(
                "out-of-bounds",
                f"{run.summary.out_of_bounds} out-of-bounds values (line {run.summary.out_of_bounds_line})",
                node_fault=True,
            )

    def _lowered(self) -> None:
        sweep = self.run.sweep
        if sweep.asked_max_bytes is None or sweep.max_bytes is None:
            return
        how = (
            "its JSON does not record the lowered maximum; the footer shows the sweep ran to the end"
            if self.run.kind == "json"
            else "'# Reducing maxBytes ... due to memory limitation'"
        )
        self.notes.append(
            f"nccl-tests lowered the largest size from {size_text(sweep.asked_max_bytes)} to "
            f"{sweep.max_bytes} bytes to fit GPU memory ({how})"
        )

    def _stops(self) -> list[str]:
        run = self.run
        stops: list[str] = []
        if run.cut_row_line is not None:
            stops.append(f"the row at line {run.cut_row_line} is cut short")
        if not run.rows:
            stops.append("no complete result row")
        largest = max((row.size_bytes for row in run.rows), default=0)
        asked = run.sweep.max_bytes
        # Below the next size: where nccl-tests stops on its own, not an early stop.
        if run.rows and asked and run.sweep.after(largest) <= asked:
            stops.append(f"the largest size is {size_text(largest)} of the {size_text(asked)} asked for")
        if run.summary.line is None:
            stops.append("no end_time" if run.kind == "json" else "no '# Avg bus bandwidth' summary line")
        return stops

    def scale(self) -> tuple[Count | None, bool]:
        """The node count, and whether the run crossed the network."""
        run = self.run
        nodes = run.nodes
        instance = self.context.instance
        if nodes is None and run.ranks and instance is not None:
            # One rank per GPU (-g 1, as the jobs and the published runs use).
            ranks = run.ranks.value
            guess = round(ranks / instance.gpu_count)
            if guess >= 1 and abs(ranks - guess * instance.gpu_count) <= max(1, 0.05 * ranks):
                nodes = Count(value=guess, origin="derived")
        if run.ranks is not None and run.ranks.value == 1:
            self.add("one-rank", "one rank: the run tests no network", node_fault=False)
            return nodes, False
        if nodes is not None and nodes.value == 1:
            self.add("one-node", "one node: the run tests NVLink or PCIe, not the network", node_fault=False)
            return nodes, False
        if run.ranks is None:
            self.notes.append("rank count not shown in the log")
        return nodes, True

    def bandwidth(self, nodes: int | None) -> tuple[Peak | None, Threshold | None]:
        run = self.run
        if run.collective is None:
            self.add(
                "collective-unknown", "the log names no collective: no threshold applies", node_fault=False
            )
            return None, None
        judged = run.collective == collectives.ALL_REDUCE
        if not judged:
            self.notes.append(
                "bandwidth not judged: the published figures and --min-busbw are for "
                f"{collectives.ALL_REDUCE}"
            )
        large = [row for row in run.rows if row.size_bytes >= LARGE_MESSAGE_BYTES and _busbw(row) is not None]
        best = max(large, key=lambda row: _busbw(row) or 0.0, default=None)
        peak = (
            Peak(busbw_gbps=_busbw(best) or 0.0, size_bytes=best.size_bytes, line=best.line) if best else None
        )
        if not judged:
            return peak, None
        threshold = self._threshold(run.collective, nodes)
        if peak is None:
            largest = max((row.size_bytes for row in run.rows), default=0)
            self.add(
                "no-large-message",
                f"no result at {size_text(LARGE_MESSAGE_BYTES)} or more (largest {size_text(largest)}); "
                "run with -e 16G",
                node_fault=False,
            )
        elif threshold is not None and peak.busbw_gbps < threshold.floor_gbps:
            self.add(
                "busbw-below-threshold",
                f"peak busbw {peak.busbw_gbps:.2f} GB/s at {size_text(peak.size_bytes)} (line {peak.line}) "
                f"is below {threshold.describe()}",
                node_fault=True,
            )
        return peak, threshold

    def _threshold(self, collective: str, nodes: int | None) -> Threshold | None:
        context = self.context
        if context.min_busbw is not None:
            return Threshold(floor_gbps=context.min_busbw, origin="--min-busbw")
        fix = "pass --min-busbw GBPS"
        if context.instance is None:
            self.add(
                "no-threshold",
                "no instance type to take a threshold from: pass --instance-type, "
                f"--config with --group, or {fix}",
                node_fault=False,
            )
            return None
        name = context.instance.name
        if not context.efa_expected:
            self.add(
                "no-threshold",
                f"the published figures were measured over EFA and this {name} group runs without it "
                f"(efa: false); {fix} or set validation.min_busbw_gbps",
                node_fault=False,
            )
            return None
        if nodes is None:
            self.add("no-threshold", f"node count unknown: no threshold applies; {fix}", node_fault=False)
            return None
        figure = published(collective, name, nodes)
        if figure is None:
            counts = published_node_counts(collective, name)
            have = f"published for {', '.join(map(str, counts))} nodes" if counts else "none published"
            self.add(
                "no-threshold",
                f"no published {collective} figure for {nodes} x {name} ({have}); {fix}",
                node_fault=False,
            )
            return None
        floor = figure.busbw_gbps * context.min_fraction
        return Threshold(floor_gbps=floor, origin="published", figure=figure, fraction=context.min_fraction)


def _wrong(row: SizeRow) -> int:
    return (row.out_of_place.wrong or 0) + (row.in_place.wrong or 0)


def _busbw(row: SizeRow | None) -> float | None:
    return None if row is None else row.out_of_place.busbw_gbps


def decide_run(run: NcclRun, context: Context) -> Verdict:
    judge = _Judge(run, context)
    judge.results()
    nodes, networked = judge.scale()
    judge_transport(run, context.instance, context.efa_expected, judge.add, judge.notes)
    peak, threshold = judge.bandwidth(nodes.value if nodes else None) if networked else (None, None)
    return Verdict(
        label=run.label,
        source=run.source,
        line=run.first_line,
        go=not judge.reasons,
        reasons=tuple(judge.reasons),
        notes=tuple(judge.notes),
        run=run,
        nodes=nodes,
        peak=peak,
        threshold=threshold,
    )

"""The gate's verdict for people (a table, report.md) and for CI (report.json)."""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape

from gpucluster.gate.decide import Verdict, size_text
from gpucluster.gate.model import Count, Frozen
from gpucluster.gate.pairs import Attribution, Suspect
from gpucluster.gate.thresholds import DEFAULT_MIN_FRACTION
from gpucluster.tables import CliTable, table


class GateResult(Frozen):
    go: bool
    instance_type: str | None
    min_fraction: float = DEFAULT_MIN_FRACTION
    min_busbw_gbps: float | None = None
    verdicts: tuple[Verdict, ...]
    attribution: Attribution

    @property
    def word(self) -> str:
        return "GO" if self.go else "NO-GO"


def verdict_word(verdict: Verdict) -> str:
    return "GO" if verdict.go else "NO-GO"


def transport_text(verdict: Verdict) -> str:
    run = verdict.run
    if run is None:
        return "efa-check"
    if not run.networks:
        return "unknown"
    kinds: dict[str, set[int]] = {}
    for seen in run.networks:
        label = {"efa": "EFA", "socket": "Socket", "ib": "IB"}.get(seen.kind, seen.detail)
        kinds.setdefault(label, set())
        if seen.efa_nics is not None:
            kinds[label].add(seen.efa_nics)
    parts = []
    for label, nics in sorted(kinds.items()):
        counts = "/".join(str(count) for count in sorted(nics))
        parts.append(f"{label} ({counts} nics)" if counts else label)
    return ", ".join(parts)


def _scale_text(verdict: Verdict) -> tuple[str, str]:
    run = verdict.run
    if run is None:
        return str(len(verdict.efa_checks)), str(len(verdict.efa_checks))
    return _count(run.ranks), _count(verdict.nodes)


def _count(count: Count | None) -> str:
    if count is None:
        return "?"
    return f"{count.value}*" if count.origin == "derived" else str(count.value)


def summary_rows(result: GateResult) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for verdict in result.verdicts:
        ranks, nodes = _scale_text(verdict)
        peak = (
            f"{verdict.peak.busbw_gbps:.2f} @ {size_text(verdict.peak.size_bytes)}" if verdict.peak else "-"
        )
        threshold = f"{verdict.threshold.floor_gbps:.2f}" if verdict.threshold else "-"
        collective = (verdict.run.collective or "?") if verdict.run else "efa-check"
        rows.append(
            (
                f"{verdict.source}:{verdict.line}",
                collective,
                ranks,
                nodes,
                transport_text(verdict),
                peak,
                threshold,
                verdict_word(verdict),
            )
        )
    return rows


COLUMNS = ("log", "collective", "ranks", "nodes", "transport", "peak busbw GB/s", "floor GB/s", "verdict")
DERIVED = "derived from busbw/algbw or ranks per node, not printed in the log"


def summary_table(result: GateResult) -> CliTable:
    # File names, collective and network names come from the logs: never rich markup.
    rows = [tuple(escape(cell) for cell in row) for row in summary_rows(result)]
    return table(f"gpucluster gate: {result.word}", COLUMNS, rows)


def reason_lines(result: GateResult) -> list[str]:
    """What a `*` in the table means (when there is one), every NO-GO run's reasons and
    every run's notes, one line each, for the terminal."""
    derived = any(cell.endswith("*") for row in summary_rows(result) for cell in row[2:4])
    lines = [f"* {DERIVED}"] if derived else []
    for verdict in result.verdicts:
        for reason in verdict.reasons:
            lines.append(f"NO-GO {verdict.source}:{verdict.line}: {reason.text}")
        for note in verdict.notes:
            lines.append(f"note {verdict.source}:{verdict.line}: {note}")
    for suspect in result.attribution.suspects:
        lines.append(f"suspect node {suspect.node}{_switch(suspect)}: " + "; ".join(suspect.evidence))
    lines.extend(f"note: {note}" for note in result.attribution.notes)
    return lines


def _switch(suspect: Suspect) -> str:
    return f" (switch {suspect.switch})" if suspect.switch else ""


def drain_lines(result: GateResult) -> list[str]:
    return [suspect.drain for suspect in result.attribution.suspects]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(result: GateResult, plots: dict[int, str]) -> str:
    out = [f"# gpucluster gate: {result.word}", ""]
    out.append(f"- instance type: {result.instance_type or 'not given'}")
    if result.min_busbw_gbps is not None:
        out.append(f"- threshold: --min-busbw {result.min_busbw_gbps:g} GB/s")
    else:
        out.append(f"- threshold: published figure x {result.min_fraction:g} (--min-fraction)")
    out += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in summary_rows(result)]
    out += ["", f"`*` {DERIVED}.", ""]
    for index, verdict in enumerate(result.verdicts):
        out.append(f"## {_cell(verdict.label)}: {verdict_word(verdict)}")
        out.append("")
        out += [f"- **{reason.code}**: {reason.text}" for reason in verdict.reasons]
        out += [f"- note: {note}" for note in verdict.notes]
        if verdict.threshold is not None and "busbw-below-threshold" not in {r.code for r in verdict.reasons}:
            out.append(f"- threshold: {verdict.threshold.describe()}")
        if index in plots:
            out += ["", f"![busbw]({plots[index]})"]
        out.append("")
    if result.attribution.pairs:
        out += [f"## Pairwise attribution ({result.attribution.pairs} pair runs)", ""]
        out += [
            f"- suspect **{s.node}**{_switch(s)}: {'; '.join(s.evidence)}"
            for s in result.attribution.suspects
        ]
        out += [f"- note: {note}" for note in result.attribution.notes]
        if not result.attribution.suspects:
            out.append("- no suspect node")
        out.append("")
    elif result.attribution.suspects:
        out += ["## Suspect nodes", ""]
        out += [f"- **{s.node}**{_switch(s)}: {'; '.join(s.evidence)}" for s in result.attribution.suspects]
        out.append("")
    drains = drain_lines(result)
    if drains:
        out += ["To take the suspects out of scheduling:", "", "```sh", *drains, "```", ""]
    return "\n".join(out)


def json_report(result: GateResult, plots: dict[int, str]) -> str:
    data: dict[str, Any] = {"verdict": result.word, "exit_code": 0 if result.go else 1}
    data.update(result.model_dump(mode="json"))
    for index, entry in enumerate(data["verdicts"]):
        entry["verdict"] = verdict_word(result.verdicts[index])
        entry["plot"] = plots.get(index)
    data["drain_commands"] = drain_lines(result)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"

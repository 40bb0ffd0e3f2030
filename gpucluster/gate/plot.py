"""busbw against message size, one PNG per run, with the threshold drawn.

matplotlib's object API with the Agg canvas: no pyplot, no global backend state, no
display needed (login nodes and CI have none). Imported only when a report is written.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from gpucluster.gate.decide import Verdict, size_text


def plot_name(index: int, verdict: Verdict) -> str:
    stem = Path(verdict.source).name
    collective = verdict.run.collective if verdict.run and verdict.run.collective else "run"
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{stem}-{collective}")[:80]
    return f"busbw-{index:02d}-{slug}.png"


def busbw_figure(verdict: Verdict) -> Figure | None:
    """The figure for one run; None when the run has no bandwidth to draw."""
    run = verdict.run
    if run is None:
        return None
    measured = [
        (row.size_bytes, row.out_of_place.busbw_gbps)
        for row in run.rows
        if row.size_bytes > 0 and row.out_of_place.busbw_gbps is not None
    ]
    if not measured:
        return None
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    sizes = [size for size, _ in measured]
    axes.plot(sizes, [busbw for _, busbw in measured], marker="o", label="out-of-place")
    in_place = [
        (row.size_bytes, row.in_place.busbw_gbps)
        for row in run.rows
        if row.size_bytes > 0 and row.in_place.busbw_gbps is not None
    ]
    if in_place:
        axes.plot(*zip(*in_place, strict=True), marker=".", linestyle="--", label="in-place")
    threshold = verdict.threshold
    if threshold is not None:
        axes.axhline(
            threshold.floor_gbps,
            color="red",
            linestyle=":",
            label=f"threshold {threshold.floor_gbps:.1f} GB/s",
        )
        if threshold.figure is not None:
            axes.axhline(
                threshold.figure.busbw_gbps,
                color="grey",
                linestyle="-.",
                label=f"published {threshold.figure.busbw_gbps:.1f} GB/s",
            )
    axes.set_xscale("log", base=2)
    ticks = sizes[:: max(1, len(sizes) // 8)]
    axes.set_xticks(ticks, [size_text(size) for size in ticks], rotation=30, fontsize=8)
    axes.set_xlabel("message size")
    axes.set_ylabel("busbw (GB/s)")
    verdict_text = "GO" if verdict.go else "NO-GO"
    # The label holds a file name and a collective from the log: plain text, not mathtext ($...$).
    axes.set_title(f"{verdict.label} ({verdict_text})", fontsize=9, parse_math=False)
    axes.grid(True, which="major", alpha=0.3)
    axes.legend(fontsize=8)
    with warnings.catch_warnings():
        # A character the font lacks (from a file name) is drawn as a box; no need to say so.
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        figure.tight_layout()
    return figure


def write_plot(verdict: Verdict, path: Path) -> bool:
    figure = busbw_figure(verdict)
    if figure is None:
        return False
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        figure.savefig(path, format="png")
    return True

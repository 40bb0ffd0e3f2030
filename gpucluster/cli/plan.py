"""`gpucluster plan`: ranks, nodes and global batch of a parallel layout on a compute group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.cli.root import app, load_checked, out
from gpucluster.cli.runner import VerbCommand
from gpucluster.tables import print_table, table


def _size(option: str, what: str) -> object:
    return typer.Option(option, metavar="N", min=1, help=what, show_default=False)


@app.command(cls=VerbCommand)
def plan(
    config: Annotated[Path, typer.Option("--config", metavar="CONFIG", help="Cluster config YAML.")],
    tp: Annotated[int, _size("--tp", "Tensor-parallel size (within a node).")],
    pp: Annotated[int, _size("--pp", "Pipeline-parallel stages.")],
    dp: Annotated[int, _size("--dp", "Data-parallel replicas.")],
    micro_batch: Annotated[int, _size("--micro-batch", "Samples per rank per micro-step.")],
    accum: Annotated[int, _size("--accum", "Micro-steps accumulated per optimizer step.")],
    group: Annotated[
        str | None, typer.Option("--group", metavar="NAME", help="Compute group (needed with several).")
    ] = None,
    ep: Annotated[int, _size("--ep", "Expert-parallel size, a split of DP (within a node).")] = 1,
    cp: Annotated[int, _size("--cp", "Context-parallel size.")] = 1,
) -> None:
    """Ranks, nodes and global batch of a TP/PP/DP(/EP/CP) layout on a group; exit 2 if it cannot run."""
    from gpucluster.plan import Layout
    from gpucluster.plan.group import plan_group

    cfg = load_checked(config)
    layout = Layout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, micro_batch=micro_batch, accum=accum)
    result = plan_group(cfg, config, group, layout)
    print_table(out, table(f"plan for group {result.group.name}", ("", "value"), result.rows()))

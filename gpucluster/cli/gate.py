"""`gpucluster gate`: GO / NO-GO from the validation jobs' output."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.cli.root import app, out
from gpucluster.cli.runner import VerbCommand
from gpucluster.gate.thresholds import DEFAULT_MIN_FRACTION


@app.command(cls=VerbCommand)
def gate(
    logs: Annotated[
        list[Path],
        typer.Argument(metavar="LOG...", help="nccl-tests logs, their -J JSON files, efa-check output."),
    ],
    config: Annotated[
        Path | None,
        typer.Option("--config", metavar="CONFIG", help="Cluster config: thresholds for --group."),
    ] = None,
    group: Annotated[
        str | None, typer.Option("--group", metavar="NAME", help="Compute group the logs ran on.")
    ] = None,
    instance_type: Annotated[
        str | None, typer.Option("--instance-type", metavar="TYPE", help="Instance type, without a config.")
    ] = None,
    min_fraction: Annotated[
        float | None,
        typer.Option(
            "--min-fraction",
            metavar="F",
            min=0.01,
            max=1.0,
            help=f"Share of the published busbw a run must reach (default: the config's "
            f"validation.min_fraction, else {DEFAULT_MIN_FRACTION}).",
        ),
    ] = None,
    min_busbw: Annotated[
        float | None,
        typer.Option(
            "--min-busbw",
            metavar="GBPS",
            min=0.01,
            help="all_reduce_perf busbw floor in GB/s, instead of the published figure "
            "(default: the config's validation.min_busbw_gbps).",
        ),
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", metavar="DIR", help="Write report.md, report.json, PNG plots.")
    ] = None,
    topology: Annotated[
        Path | None,
        typer.Option(
            "--topology",
            metavar="TOPOLOGY_CONF",
            help="The cluster's topology.conf: name each suspect's switch, and report a drop that "
            "follows a switch boundary as such.",
        ),
    ] = None,
) -> None:
    """GO / NO-GO from nccl-tests logs: exit 0 GO, 1 NO-GO, 2 unreadable input."""
    from gpucluster.gate.run import gate_command, read_topology, resolve_target

    target = resolve_target(config, group, instance_type)
    fraction, floor = target.thresholds(min_fraction, min_busbw)
    leaves = read_topology(topology) if topology is not None else None
    raise typer.Exit(
        gate_command(
            out, logs, target.instance, fraction, floor, report, efa_expected=target.efa, leaves=leaves
        )
    )

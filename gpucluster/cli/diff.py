"""`gpucluster diff`: the offline guard against replacing or deleting what holds data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gpucluster.bad_input import BadInput
from gpucluster.cli.root import ConfigArg, app, load_checked
from gpucluster.cli.runner import VerbCommand


@app.command(cls=VerbCommand)
def diff(
    config: ConfigArg,
    baseline: Annotated[
        Path,
        typer.Option("--baseline", metavar="DIR", help="cdk.out or snapshot directory to compare with."),
    ],
    allow_replace: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-replace",
            metavar="LOGICAL_ID",
            help="Logical ID (or STACK/LOGICAL_ID) of a change the diff stops on that you "
            "accept (a stateful resource lost, the head node or an EKS cluster or node group "
            "replaced, a Capacity Block node group resized); repeat for several.",
        ),
    ] = None,
) -> None:
    """Offline template diff; exit 1 when a stateful resource would be replaced or deleted,
    2 when a change cannot be deployed at all (a file system that would shrink)."""
    from gpucluster.diff import against_baseline, print_report

    cfg = load_checked(config)
    report = against_baseline(cfg, config, baseline, frozenset(allow_replace or ()))
    # soft_wrap: each finding stays on one line in a CI log (tables size themselves).
    print_report(report, Console(soft_wrap=True))
    if report.refusals:
        raise BadInput.from_problems(config, [refusal.problem_line() for refusal in report.refusals])
    raise typer.Exit(report.exit_code)

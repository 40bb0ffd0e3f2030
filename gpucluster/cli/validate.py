"""`gpucluster validate` and `gpucluster schema`: the config checked, its JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from gpucluster.bad_input import BadInput
from gpucluster.cli.root import ConfigArg, app, err, load_checked, out
from gpucluster.cli.runner import VerbCommand
from gpucluster.config import ClusterConfig


@app.command(cls=VerbCommand)
def validate(
    config: ConfigArg,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="DIR",
            help="Templates of the deployed cluster (cdk.out or snapshot): also refuse changes "
            "that cannot be made to it in place (an FSx file system that would shrink).",
        ),
    ] = None,
) -> None:
    """Check a config: exit 0, or exit 2 with one line per problem."""
    cfg = load_checked(config)
    against = ""
    if baseline is not None:
        from gpucluster.diff import against_baseline

        report = against_baseline(cfg, config, baseline)
        if report.refusals:
            raise BadInput.from_problems(config, [refusal.problem_line() for refusal in report.refusals])
        if report.blocking:
            err.print(
                f"[yellow]warning[/yellow] {config}: {len(report.blocking)} resource(s) holding data, or "
                "the head node, would be replaced or deleted; `gpucluster diff` shows which",
                highlight=False,
                soft_wrap=True,
            )
        against = f", deployable over {baseline}"
    out.print(
        f"[green]ok[/green] {config}: cluster {cfg.name}, {len(cfg.compute_groups)} compute group(s)"
        + against,
        highlight=False,
        soft_wrap=True,
    )


@app.command(cls=VerbCommand)
def schema() -> None:
    """Print the JSON Schema of the config, for editors."""
    print(json.dumps(ClusterConfig.model_json_schema(), indent=2, sort_keys=True))

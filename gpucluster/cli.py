"""The `gpucluster` command: validate, synth, render, diff, schema.

Every user error (bad config, missing file, unsafe diff) ends with exit code 2
or 1 and a message; no traceback reaches the user for input problems.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from gpucluster.config import ClusterConfig
from gpucluster.loader import ConfigError, load_config

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Turn one YAML file into a Slurm GPU training cluster on AWS (CDK).",
)
out = Console()
err = Console(stderr=True)

ConfigArg = Annotated[Path, typer.Argument(help="Cluster config YAML (see examples/).")]
EXIT_INVALID = 2


def _load_or_exit(path: Path) -> ClusterConfig:
    try:
        cfg = load_config(path)
    except ConfigError as exc:
        for problem in exc.problems:
            err.print(f"[red]error[/red] {exc.source}: {problem}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID) from None
    for warning in cfg.warnings():
        err.print(f"[yellow]warning[/yellow] {path}: {warning}", highlight=False, soft_wrap=True)
    return cfg


@app.command()
def validate(config: ConfigArg) -> None:
    """Check a config: exit 0, or exit 2 with one line per problem."""
    cfg = _load_or_exit(config)
    out.print(f"[green]ok[/green] {config}: cluster {cfg.name}, {len(cfg.compute_groups)} compute group(s)")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the config, for editors."""
    print(json.dumps(ClusterConfig.model_json_schema(), indent=2, sort_keys=True))


@app.command()
def synth(
    config: ConfigArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Cloud assembly directory.")] = Path(
        "cdk.out"
    ),
) -> None:
    """Synthesize the CloudFormation templates in-process, the same as `cdk synth`."""
    cfg = _load_or_exit(config)
    from gpucluster.summary import cluster_summary
    from gpucluster.synth import synthesize
    from gpucluster.userdata import UserDataTooLarge

    try:
        result = synthesize(cfg, output)
    except UserDataTooLarge as exc:
        err.print(f"[red]error[/red] {config}: {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INVALID) from None
    except RuntimeError as exc:
        err.print(f"[red]synth failed[/red]: {exc}", highlight=False, soft_wrap=True)
        report = Path(output) / "validation-report.json"
        if report.exists():
            err.print(f"see {report} for each finding", highlight=False)
        raise typer.Exit(1) from None
    for table in cluster_summary(cfg, result):
        out.print(table)
    out.print(f"templates written to {result.outdir}")


@app.command()
def render(
    config: ConfigArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Directory for rendered files.")],
) -> None:
    """Write every rendered user-data, Slurm, Enroot and Pyxis file, per role and group."""
    cfg = _load_or_exit(config)
    from gpucluster.render_cmd import render_to_dir

    written = render_to_dir(cfg, output)
    table = Table(title=f"rendered into {output}")
    table.add_column("file")
    table.add_column("bytes", justify="right")
    for path in written:
        table.add_row(str(path.relative_to(output)), str(path.stat().st_size))
    out.print(table)


@app.command()
def diff(
    config: ConfigArg,
    baseline: Annotated[
        Path, typer.Option("--baseline", help="cdk.out or snapshot directory to compare with.")
    ],
    allow_replace: Annotated[
        list[str] | None,
        typer.Option("--allow-replace", help="Logical ID of a stateful resource you accept losing."),
    ] = None,
) -> None:
    """Offline template diff; exit 1 when a stateful resource would be replaced or deleted."""
    _load_or_exit(config)
    from gpucluster.diff import run_diff

    raise typer.Exit(run_diff(config, baseline, set(allow_replace or ())))


@app.command()
def scan(
    paths: Annotated[list[Path], typer.Argument(help="cdk.out and rendered-file directories.")],
) -> None:
    """Exit 1 when key material or passwords appear in synthesized or rendered output."""
    from gpucluster.secret_scan import run_scan

    raise typer.Exit(run_scan(paths))


def main() -> None:
    app()

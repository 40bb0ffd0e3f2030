"""The `gpucluster` command: validate, synth, render, diff, scan, schema, gate, plan.

Every verb fails the same way (gpucluster.command_line): bad input exits 2 with
`error FILE: FIELD: what; fix`, a usage error exits 2 with one `usage error:` line,
a failed check exits 1, and no traceback reaches the user.
"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from gpucluster.bad_input import EXIT_BAD_INPUT, BadInput, output_dir
from gpucluster.command_line import GpuclusterGroup, VerbCommand
from gpucluster.config import ClusterConfig
from gpucluster.gate.thresholds import DEFAULT_MIN_FRACTION
from gpucluster.loader import load_config
from gpucluster.tables import print_table, table

app = typer.Typer(
    cls=GpuclusterGroup,
    add_completion=False,
    no_args_is_help=True,
    # Tracebacks with locals would print config values; command_line reports errors.
    pretty_exceptions_enable=False,
    # Plain click help: rich help shows Python type names (<bool>, <list[str]>) and boxes.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Turn one YAML file into a Slurm GPU training cluster on AWS (CDK).\n\n"
    "Exit codes: 0 ok, 1 a check failed, 2 bad input or usage error, 3 a bug in gpucluster.",
)
out = Console()
err = Console(stderr=True)

ConfigArg = Annotated[
    Path, typer.Argument(metavar="CONFIG", help="Cluster config YAML (see examples/).", show_default=False)
]
DEFAULT_RENDER_DIR = Path("rendered")
DEFAULT_SYNTH_DIR = Path("cdk.out")


def _version() -> str:
    try:
        return version("gpucluster")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        print(f"gpucluster {_version()}")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the gpucluster version and exit."
        ),
    ] = False,
) -> None:
    """Turn one YAML file into a Slurm GPU training cluster on AWS (CDK)."""


def _load(path: Path) -> ClusterConfig:
    cfg = load_config(path)
    for warning in cfg.warnings():
        err.print(f"[yellow]warning[/yellow] {path}: {warning}", highlight=False, soft_wrap=True)
    return cfg


@app.command(cls=VerbCommand)
def validate(config: ConfigArg) -> None:
    """Check a config: exit 0, or exit 2 with one line per problem."""
    cfg = _load(config)
    out.print(
        f"[green]ok[/green] {config}: cluster {cfg.name}, {len(cfg.compute_groups)} compute group(s)",
        highlight=False,
        soft_wrap=True,
    )


@app.command(cls=VerbCommand)
def schema() -> None:
    """Print the JSON Schema of the config, for editors."""
    print(json.dumps(ClusterConfig.model_json_schema(), indent=2, sort_keys=True))


@app.command(cls=VerbCommand)
def synth(
    config: ConfigArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="Cloud assembly directory.")
    ] = DEFAULT_SYNTH_DIR,
) -> None:
    """Synthesize the CloudFormation templates in-process, the same as `cdk synth`."""
    cfg = _load(config)
    output_dir(output, "--output")
    from gpucluster.summary import cluster_summary
    from gpucluster.synth import synthesize

    try:
        result = synthesize(cfg, output, source=config)
    except RuntimeError as exc:
        err.print(f"[red]synth failed[/red]: {exc}", highlight=False, soft_wrap=True)
        report = Path(output) / "validation-report.json"
        if report.exists():
            err.print(f"see {report} for each finding", highlight=False)
        raise typer.Exit(1) from None
    for shown in cluster_summary(cfg, result):
        print_table(out, shown)
    out.print(f"templates written to {result.outdir}", highlight=False, soft_wrap=True)


@app.command(cls=VerbCommand)
def render(
    config: ConfigArg,
    output: Annotated[
        Path,
        typer.Option("--output", "-o", metavar="DIR", help="Directory for rendered files."),
    ] = DEFAULT_RENDER_DIR,
) -> None:
    """Write every rendered user-data, Slurm, Enroot and Pyxis file, per role and group."""
    cfg = _load(config)
    output_dir(output, "--output")
    from gpucluster.render_cmd import render_to_dir

    try:
        written = render_to_dir(cfg, output)
    except OSError as exc:
        raise BadInput(
            exc.filename or output,
            "(--output)",
            f"cannot be written ({exc.strerror})",
            "pass a directory you can write to --output",
        ) from None
    rows = [(str(path.relative_to(output)), f"{path.stat().st_size:,}") for path in written]
    print_table(out, table(f"rendered into {output}", ("file", "bytes"), rows))


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
            help="Logical ID (or STACK/LOGICAL_ID) of a stateful resource you accept "
            "losing; repeat for several.",
        ),
    ] = None,
) -> None:
    """Offline template diff; exit 1 when a stateful resource would be replaced or deleted."""
    import tempfile

    from gpucluster.diff import diff_templates, print_report, read_baseline

    cfg = _load(config)
    before = read_baseline(baseline)
    # Imported once the inputs are known good: loading aws_cdk takes about a second.
    from gpucluster.synth import synthesize

    with tempfile.TemporaryDirectory(prefix="gpucluster-diff-") as outdir:
        # cdk-nag only reports and never changes a template: `synth` is where it runs.
        after = dict(synthesize(cfg, Path(outdir), nag=False, source=config).templates)
    report = diff_templates(before, after, set(allow_replace or ()), region=cfg.region)
    # soft_wrap: each finding stays on one line in a CI log (tables size themselves).
    print_report(report, Console(soft_wrap=True))
    raise typer.Exit(report.exit_code)


@app.command(cls=VerbCommand)
def scan(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATH...", help="cdk.out and rendered-file directories.")
    ],
) -> None:
    """Exit 1 when key material or passwords appear in synthesized or rendered output."""
    from gpucluster.secret_scan import run_scan

    missing = [path for path in paths if not path.exists()]
    if missing:
        raise BadInput(missing[0], "(path)", "does not exist", "pass a cdk.out or rendered-files directory")
    raise typer.Exit(run_scan(paths))


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
        float,
        typer.Option(
            "--min-fraction",
            metavar="F",
            min=0.01,
            max=1.0,
            help="Share of the published busbw a run must reach.",
        ),
    ] = DEFAULT_MIN_FRACTION,
    min_busbw: Annotated[
        float | None,
        typer.Option(
            "--min-busbw",
            metavar="GBPS",
            min=0.01,
            help="all_reduce_perf busbw floor in GB/s, instead of the published figure.",
        ),
    ] = None,
    report: Annotated[
        Path | None, typer.Option("--report", metavar="DIR", help="Write report.md, report.json, PNG plots.")
    ] = None,
) -> None:
    """GO / NO-GO from nccl-tests logs: exit 0 GO, 1 NO-GO, 2 unreadable input."""
    from gpucluster.gate.run import gate_command, resolve_instance

    instance = resolve_instance(config, group, instance_type)
    raise typer.Exit(gate_command(out, logs, instance, min_fraction, min_busbw, report))


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

    cfg = _load(config)
    layout = Layout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, micro_batch=micro_batch, accum=accum)
    result = plan_group(cfg, config, group, layout)
    print_table(out, table(f"plan for group {result.group.name}", ("", "value"), result.rows()))


def main() -> None:
    app()


__all__ = ["EXIT_BAD_INPUT", "app", "main"]

"""`gpucluster diff`: the offline guard against replacing or deleting what holds data."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

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
            help="Logical ID (or STACK/LOGICAL_ID) of a stateful resource you accept "
            "losing; repeat for several.",
        ),
    ] = None,
) -> None:
    """Offline template diff; exit 1 when a stateful resource would be replaced or deleted."""
    import tempfile

    from gpucluster.diff import diff_templates, print_report, read_baseline

    cfg = load_checked(config)
    before = read_baseline(baseline)
    # Imported once the inputs are known good: loading aws_cdk takes about a second.
    from gpucluster.synth.app import synthesize

    with tempfile.TemporaryDirectory(prefix="gpucluster-diff-") as outdir:
        # cdk-nag only reports and never changes a template: `synth` is where it runs.
        after = dict(
            synthesize(cfg, Path(outdir), nag=False, source=config, outdir_option="TMPDIR").templates
        )
    report = diff_templates(before, after, set(allow_replace or ()), region=cfg.region)
    # soft_wrap: each finding stays on one line in a CI log (tables size themselves).
    print_report(report, Console(soft_wrap=True))
    raise typer.Exit(report.exit_code)

"""`gpucluster synth`: the templates written in-process, and a summary of what was built."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.bad_input import output_dir
from gpucluster.cli.root import ConfigArg, app, load_checked, out, warn_each
from gpucluster.cli.runner import VerbCommand
from gpucluster.progress import working
from gpucluster.tables import print_table

DEFAULT_SYNTH_DIR = Path("cdk.out")


@app.command(cls=VerbCommand)
def synth(
    config: ConfigArg,
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="Cloud assembly directory.")
    ] = DEFAULT_SYNTH_DIR,
    nag: Annotated[
        bool,
        typer.Option(
            "--nag",
            help="Also run cdk-nag's AwsSolutions checks, as `cdk synth` and `cdk deploy` do: "
            "an unacknowledged finding fails with exit 1. The templates are the same either way.",
        ),
    ] = False,
) -> None:
    """Synthesize the CloudFormation templates in-process, the same as `cdk synth`."""
    cfg = load_checked(config)
    output_dir(output, "--output")
    from gpucluster.synth.app import synthesize
    from gpucluster.synth.nag import NagFindings, report_findings
    from gpucluster.synth.summary import cluster_summary

    try:
        with working(f"synth: {config}"):
            result = synthesize(cfg, output, nag=nag, source=config)
    except NagFindings as exc:
        raise typer.Exit(report_findings(exc)) from None
    warn_each(list(result.notes))
    for shown in cluster_summary(cfg, result):
        print_table(out, shown)
    out.print(f"templates written to {result.outdir}", highlight=False, soft_wrap=True)

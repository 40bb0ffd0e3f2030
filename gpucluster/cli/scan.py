"""`gpucluster scan`: key material or passwords in synthesized or rendered output."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.bad_input import BadInput
from gpucluster.cli.root import app
from gpucluster.cli.runner import VerbCommand


@app.command(cls=VerbCommand)
def scan(
    paths: Annotated[
        list[Path], typer.Argument(metavar="PATH...", help="cdk.out and rendered-file directories.")
    ],
) -> None:
    """Exit 1 when key material or passwords appear in synthesized or rendered output."""
    from gpucluster.scan.secrets import run_scan

    missing = [path for path in paths if not path.exists()]
    if missing:
        raise BadInput(missing[0], "(path)", "does not exist", "pass a cdk.out or rendered-files directory")
    raise typer.Exit(run_scan(paths))

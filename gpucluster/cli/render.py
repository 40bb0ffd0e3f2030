"""`gpucluster render`: every file a node receives, written to a directory to read."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.bad_input import output_dir, writing_into
from gpucluster.cli.root import ConfigArg, app, load_checked, out, warn_each
from gpucluster.cli.runner import VerbCommand
from gpucluster.output_files import replacing
from gpucluster.tables import print_table, table

DEFAULT_RENDER_DIR = Path("rendered")


@app.command(cls=VerbCommand)
def render(
    config: ConfigArg,
    output: Annotated[
        Path,
        typer.Option("--output", "-o", metavar="DIR", help="Directory for rendered files."),
    ] = DEFAULT_RENDER_DIR,
) -> None:
    """Write every rendered user-data, Slurm, Enroot and Pyxis file, per role and group."""
    cfg = load_checked(config)
    output_dir(output, "--output")
    from gpucluster.bootstrap.render_files import render_to_dir

    with writing_into(output, "--output"), replacing(output, "render", "--output") as files:
        written = [files.final(path) for path in render_to_dir(cfg, files.staging)]
    warn_each(files.notes())
    rows = [(str(path.relative_to(output)), f"{path.stat().st_size:,}") for path in written]
    print_table(out, table(f"rendered into {output}", ("file", "bytes"), rows))

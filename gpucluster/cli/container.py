"""`gpucluster container render`: the training image's Dockerfile, written to a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.bad_input import output_dir, writing_into
from gpucluster.cli.root import load_checked, out, verb_group, warn_each
from gpucluster.cli.runner import VerbCommand
from gpucluster.command_lines import command_line, print_commands
from gpucluster.output_files import replacing

container_app = verb_group(
    "container", "The training image: NGC PyTorch with the EFA installer and your code."
)


@container_app.command(cls=VerbCommand)
def render(
    config: Annotated[
        Path, typer.Option("--config", metavar="CONFIG", help="Cluster config YAML (see examples/).")
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="DIR", help="Directory for the Dockerfile.")
    ],
) -> None:
    """Write DIR/Dockerfile: the config's NGC PyTorch tag, the pinned EFA installer, your code."""
    cfg = load_checked(config)
    output_dir(output, "--output")
    from gpucluster.container.dockerfile import write_dockerfile

    with writing_into(output, "--output"), replacing(output, "container render", "--output") as files:
        path = files.final(write_dockerfile(cfg, files.staging)).resolve()
    warn_each(files.notes())
    for line in (f"wrote {path}", "build the image from your training code's directory (the build context):"):
        out.print(line, soft_wrap=True, markup=False, highlight=False)
    # Absolute, because the build runs from the code's directory.
    print_commands(out, ["    " + command_line("docker", "build", "-f", str(path), "-t", "train:v1", ".")])

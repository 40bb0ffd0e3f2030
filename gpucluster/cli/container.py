"""`gpucluster container render`: the training image's Dockerfile, written to a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.bad_input import BadInput, output_dir
from gpucluster.cli.root import app, load_checked, out
from gpucluster.cli.runner import VerbCommand

container_app = typer.Typer(
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="The training image: NGC PyTorch with the EFA installer and your code.",
)
app.add_typer(container_app, name="container")


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

    try:
        path = write_dockerfile(cfg, output)
    except OSError as exc:
        raise BadInput(
            exc.filename or output,
            "(--output)",
            f"cannot be written ({exc.strerror})",
            "pass a directory you can write to --output",
        ) from None
    out.print(f"wrote {path}; build it from your code's directory: docker build -f {path} .")

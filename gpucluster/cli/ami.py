"""`gpucluster ami pin`: the node AMI and its kernel pinned in the config."""

from __future__ import annotations

from typing import Annotated

import typer

from gpucluster.cli.root import ConfigArg, out, verb_group
from gpucluster.cli.runner import VerbCommand
from gpucluster.config.loader import load_config

ami_app = verb_group("ami", "Pin the node AMI and its kernel in the config (calls AWS).")


@ami_app.command("pin", cls=VerbCommand)
def ami_pin(
    config: ConfigArg,
    kernel_from_cluster: Annotated[
        bool,
        typer.Option(
            "--kernel-from-cluster",
            help="Copy the kernel the deployed head node booted into image.kernel.",
        ),
    ] = False,
) -> None:
    """Write image.ami_id (from the SSM parameter) or image.kernel into the config."""
    from gpucluster.ami.pin import pin_edits
    from gpucluster.aws.clients import Clients
    from gpucluster.config.edit import edit_config

    # load_config, not _load: its warnings (AMI not pinned, kernel not set) are what this fixes.
    cfg = load_config(config)
    edits = pin_edits(Clients(), cfg, config, kernel_from_cluster)
    edit_config(config, edits)
    for edit in edits:
        note = f"  # {edit.comment}" if edit.comment else ""
        out.print(
            f"[green]pinned[/green] {'.'.join(map(str, edit.path))}: {edit.value}{note}",
            highlight=False,
            soft_wrap=True,
        )

"""The root command: the Typer app every verb registers on, its options, and what verbs share."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from gpucluster.cli.runner import GpuclusterGroup
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config

app = typer.Typer(
    cls=GpuclusterGroup,
    add_completion=False,
    no_args_is_help=True,
    # Tracebacks with locals would print config values; cli.runner reports errors.
    pretty_exceptions_enable=False,
    # Plain click help: rich help shows Python type names (<bool>, <list[str]>) and boxes.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Turn one YAML file into a Slurm GPU training cluster on AWS (CDK).\n\n"
    "Exit codes: 0 ok, 1 a check failed or AWS, Node or the disk did, 2 bad input "
    "(a file or the command line), 3 a bug in gpucluster.",
)
out = Console()
err = Console(stderr=True)

ConfigArg = Annotated[
    Path, typer.Argument(metavar="CONFIG", help="Cluster config YAML (see examples/).", show_default=False)
]


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


def load_checked(path: Path) -> ClusterConfig:
    """The config every verb reads: validated once, its warnings printed to stderr."""
    cfg = load_config(path)
    for warning in cfg.warnings():
        err.print(f"[yellow]warning[/yellow] {path}: {warning}", highlight=False, soft_wrap=True)
    return cfg


def warn_each(lines: list[str]) -> None:
    """Warnings of a verb's own (not the config's), one line each on stderr."""
    for line in lines:
        err.print(f"[yellow]warning[/yellow] {escape(line)}", highlight=False, soft_wrap=True)


def verb_group(name: str, help: str) -> typer.Typer:  # noqa: A002 - typer's name
    """A verb with sub-verbs (`gpucluster capacity find`), failing like every other verb."""
    group = typer.Typer(cls=GpuclusterGroup, no_args_is_help=True, rich_markup_mode=None, help=help)
    app.add_typer(group, name=name)
    return group

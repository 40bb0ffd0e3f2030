"""`gpucluster nodes`: every compute node's state, reason and replacement, from the head node."""

from __future__ import annotations

import typer

from gpucluster.cli.root import ConfigArg, app, load_checked, out
from gpucluster.cli.runner import VerbCommand


@app.command(cls=VerbCommand)
def nodes(config: ConfigArg) -> None:
    """Show each compute node (calls AWS): exit 0 all in service, 1 a node is drained or down."""
    from gpucluster.aws.clients import Clients
    from gpucluster.nodes.head_report import run_report
    from gpucluster.nodes.view import view
    from gpucluster.tables import print_table

    cfg = load_checked(config)
    answer = run_report(Clients(), cfg)
    shown = view(answer.report, cfg.name)
    print_table(out, shown.table)
    for note in shown.notes:
        out.print(note, highlight=False, soft_wrap=True, markup=False)
    raise typer.Exit(shown.exit_code)

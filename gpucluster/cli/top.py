"""`gpucluster top`: the cluster's GPUs, nodes and idle jobs in the terminal, from CloudWatch."""

from __future__ import annotations

from datetime import UTC, datetime

from gpucluster.cli.root import ConfigArg, app, load_checked, out
from gpucluster.cli.runner import VerbCommand


@app.command(cls=VerbCommand)
def top(config: ConfigArg) -> None:
    """Show the cluster's metrics: Slurm and GPU totals, each node, the jobs wasting GPUs."""
    from gpucluster.aws.clients import Clients
    from gpucluster.monitor.top import top as read_top
    from gpucluster.tables import print_table

    cfg = load_checked(config)
    view = read_top(Clients().get("cloudwatch", cfg.region), cfg.name, cfg.region, datetime.now(UTC))
    for shown in (view.summary, view.nodes, view.jobs):
        print_table(out, shown)

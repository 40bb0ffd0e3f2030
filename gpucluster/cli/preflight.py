"""`gpucluster preflight`: the account checked against the config before a deploy."""

from __future__ import annotations

import typer

from gpucluster.cli.root import ConfigArg, app, load_checked, out
from gpucluster.cli.runner import VerbCommand


@app.command(cls=VerbCommand)
def preflight(config: ConfigArg) -> None:
    """Check the account before deploying: exit 0 all pass, 1 a check failed, 2 bad config."""
    from gpucluster.preflight.run import preflight as run_checks
    from gpucluster.preflight.run import print_results

    cfg = load_checked(config)
    raise typer.Exit(print_results(out, str(config), run_checks(cfg)))

"""`gpucluster validate` and `gpucluster schema`: the config checked, its JSON Schema."""

from __future__ import annotations

import json

from gpucluster.cli.root import ConfigArg, app, load_checked, out
from gpucluster.cli.runner import VerbCommand
from gpucluster.config import ClusterConfig


@app.command(cls=VerbCommand)
def validate(config: ConfigArg) -> None:
    """Check a config: exit 0, or exit 2 with one line per problem."""
    cfg = load_checked(config)
    out.print(
        f"[green]ok[/green] {config}: cluster {cfg.name}, {len(cfg.compute_groups)} compute group(s)",
        highlight=False,
        soft_wrap=True,
    )


@app.command(cls=VerbCommand)
def schema() -> None:
    """Print the JSON Schema of the config, for editors."""
    print(json.dumps(ClusterConfig.model_json_schema(), indent=2, sort_keys=True))

"""`--group NAME` as every verb that takes it reads it: the compute group, or one option error."""

from __future__ import annotations

from pathlib import Path

from gpucluster.bad_input import BadInput
from gpucluster.config import ClusterConfig, ComputeGroupConfig


def _names(cfg: ClusterConfig) -> str:
    return ", ".join(group.name for group in cfg.compute_groups)


def group_index(cfg: ClusterConfig, config: Path, name: str) -> int:
    """The index of the group `--group` names; a name the config lacks blames --group."""
    for index, group in enumerate(cfg.compute_groups):
        if group.name == name:
            return index
    raise BadInput.option("--group", f"{config} has no compute group '{name}'", f"pass one of: {_names(cfg)}")


def chosen_group(cfg: ClusterConfig, config: Path, name: str | None) -> ComputeGroupConfig:
    """The group `--group` names, or the config's only group when it is not given."""
    if name is not None:
        return cfg.compute_groups[group_index(cfg, config, name)]
    if len(cfg.compute_groups) == 1:
        return cfg.compute_groups[0]
    raise BadInput.option(
        "--group", f"{config} has {len(cfg.compute_groups)} compute groups", f"pass one of: {_names(cfg)}"
    )

"""Reading what gpucluster renders for Slurm: `Key=value` lines as slurm.conf, gres.conf
and cgroup.conf write them, a config whose one group is of a given type, and one group's
slurmd line and health check as the bundle renders them (through resolve)."""

from __future__ import annotations

import yaml

from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from tests.conftest import REPO


def conf_line_of(cfg: ClusterConfig, group: ComputeGroupConfig) -> str:
    resolved = resolve(cfg)
    return slurm_conf.slurmd_conf_line(resolved, resolved.group(group.name))


def healthcheck_of(cfg: ClusterConfig, group: ComputeGroupConfig, site: SlurmSite | None = None) -> str:
    resolved = resolve(cfg)
    return slurm_conf.render_healthcheck(resolved, resolved.group(group.name), site or SlurmSite())


def settings(text: str) -> dict[str, list[str]]:
    """slurm.conf-style `Key=value ...` lines, keyed by their first key, comments dropped."""
    found: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        found.setdefault(key, []).append(value)
    return found


def single(conf: dict[str, list[str]], key: str) -> str:
    assert len(conf[key]) == 1, f"{key} set {len(conf[key])} times"
    return conf[key][0]


def line_fields(value: str) -> dict[str, str]:
    """`name Key=value Key=value` (the tail of a Nodeset= or PartitionName= line)."""
    head, *rest = value.split()
    fields = dict(item.split("=", 1) for item in rest)
    fields["_name"] = head
    return fields


def with_group(instance_type: str) -> ClusterConfig:
    raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    raw["compute_groups"][0]["instance_type"] = instance_type
    return ClusterConfig.model_validate(raw)


def with_groups(*instance_types: str) -> ClusterConfig:
    """The default example with one on-demand group per type (Capacity Blocks are not sold
    for every type), named g0, g1, ..."""
    raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    template = raw["compute_groups"][0]
    raw["compute_groups"] = [
        {**template, "name": f"g{index}", "instance_type": instance_type, "capacity": {"type": "on-demand"}}
        for index, instance_type in enumerate(instance_types)
    ]
    return ClusterConfig.model_validate(raw)

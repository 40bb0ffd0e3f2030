"""The tables `gpucluster synth` prints: what was built and how big it is."""

from __future__ import annotations

import json

from rich.table import Table

from gpucluster.config import ClusterConfig
from gpucluster.efa import efa_count
from gpucluster.synth import SynthResult
from gpucluster.userdata import BundleRef, archive_sha256, bundle_archive, render_bundle, render_user_data

TEMPLATE_RESOURCE_LIMIT = 500
TEMPLATE_BYTES_LIMIT = 1_000_000


def user_data_sizes(cfg: ClusterConfig) -> dict[str, int]:
    """Bytes of each role's user-data, with the bundle URL as it resolves at deploy time."""
    digest = archive_sha256(bundle_archive(render_bundle(cfg)))
    account = cfg.account or "123456789012"
    bundle = BundleRef(url=f"s3://cdk-hnb659fds-assets-{account}-{cfg.region}/{digest}.gz", sha256=digest)
    sizes = {
        "head": len(render_user_data(cfg, "head", None).encode()),
        "login": len(render_user_data(cfg, "login", bundle).encode()),
    }
    for group in cfg.compute_groups:
        sizes[f"compute/{group.name}"] = len(render_user_data(cfg, "compute", bundle, group).encode())
    return sizes


def cluster_summary(cfg: ClusterConfig, result: SynthResult) -> list[Table]:
    stacks = Table(title=f"cluster {cfg.name}: stacks")
    stacks.add_column("stack")
    stacks.add_column("resources", justify="right")
    stacks.add_column("template bytes", justify="right")
    for name, template in result.templates.items():
        resources = len(template.get("Resources", {}))
        size = len(json.dumps(template))
        stacks.add_row(
            name,
            f"{resources}/{TEMPLATE_RESOURCE_LIMIT}",
            f"{size:,}",
        )
    groups = Table(title="compute groups")
    for column in ("group", "instance type", "capacity", "nodes", "GPUs", "EFA/node", "placement group"):
        groups.add_column(column)
    for group in cfg.compute_groups:
        info = group.instance
        groups.add_row(
            group.name,
            group.instance_type,
            group.capacity.type,
            str(group.count),
            f"{group.count * info.gpu_count} x {info.gpu_model}",
            str(efa_count(info) if group.efa else 0),
            group.existing_placement_group or ("new" if group.creates_placement_group else "no"),
        )
    userdata = Table(title="user-data (budget 8192 bytes per role)")
    userdata.add_column("role")
    userdata.add_column("bytes", justify="right")
    for role, size in user_data_sizes(cfg).items():
        userdata.add_row(role, f"{size:,}")
    return [stacks, groups, userdata]

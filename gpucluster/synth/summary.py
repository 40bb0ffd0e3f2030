"""The tables `gpucluster synth` prints: what was built and how big it is."""

from __future__ import annotations

from gpucluster import names
from gpucluster.bootstrap.userdata import (
    USER_DATA_LIMIT,
    BundleRef,
    archive_sha256,
    bundle_archive,
    render_bundle,
    render_user_data,
)
from gpucluster.config import ClusterConfig
from gpucluster.efa import efa_count
from gpucluster.resolved import resolve
from gpucluster.synth.app import SynthResult
from gpucluster.tables import CliTable, table

TEMPLATE_RESOURCE_LIMIT = 500
TEMPLATE_BYTES_LIMIT = 1_000_000


def user_data_sizes(cfg: ClusterConfig) -> dict[str, int]:
    """Bytes of each role's user-data, with a bundle URL as long as it resolves at deploy
    time (the archive's sha256 stands in for the CDK's asset hash: both are 64 hex digits)."""
    resolved = resolve(cfg)
    digest = archive_sha256(bundle_archive(render_bundle(resolved)))
    account = cfg.account or "123456789012"
    bucket = names.cdk_assets_bucket(account, cfg.region)
    bundle = BundleRef(url=f"s3://{bucket}/{names.bundle_object_key(digest)}", sha256=digest)
    sizes = {
        "head": len(render_user_data(resolved, "head", None).encode()),
        "login": len(render_user_data(resolved, "login", bundle).encode()),
    }
    for group in resolved.groups:
        sizes[f"compute/{group.name}"] = len(render_user_data(resolved, "compute", bundle, group).encode())
    return sizes


def cluster_summary(cfg: ClusterConfig, result: SynthResult) -> list[CliTable]:
    # The size CloudFormation is handed is the file's, not a re-serialization of it.
    stacks = table(
        f"cluster {cfg.name}: stacks",
        ("stack", "resources", "template bytes"),
        [
            (
                name,
                f"{len(template.get('Resources', {}))}/{TEMPLATE_RESOURCE_LIMIT}",
                f"{result.template_path(name).stat().st_size:,}",
            )
            for name, template in result.templates.items()
        ],
    )
    group_rows = []
    for group in cfg.compute_groups:
        info = group.instance
        group_rows.append(
            (
                group.name,
                group.instance_type,
                group.capacity.type,
                str(group.count),
                f"{group.count * info.gpu_count} x {info.gpu_model}",
                str(efa_count(info) if group.efa else 0),
                group.existing_placement_group or ("new" if group.creates_placement_group else "no"),
            )
        )
    groups = table(
        "compute groups",
        ("group", "instance type", "capacity", "nodes", "GPUs", "EFA/node", "placement group"),
        group_rows,
    )
    userdata = table(
        f"user-data (budget {USER_DATA_LIMIT} bytes per role)",
        ("role", "bytes"),
        [(role, f"{size:,}") for role, size in user_data_sizes(cfg).items()],
    )
    return [stacks, groups, userdata]

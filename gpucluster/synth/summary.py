"""The tables `gpucluster synth` prints: what was built and how big it is."""

from __future__ import annotations

from gpucluster import names
from gpucluster.bootstrap.userdata import USER_DATA_LIMIT
from gpucluster.config import ClusterConfig
from gpucluster.config.orchestrator import EKS
from gpucluster.efa import efa_count
from gpucluster.node_files import NodeFiles, with_bundle_url
from gpucluster.synth.app import K8S_DIR, SynthResult
from gpucluster.tables import CliTable, table

TEMPLATE_RESOURCE_LIMIT = 500
TEMPLATE_BYTES_LIMIT = 1_000_000


def user_data_sizes(node_files: NodeFiles, account: str | None, region: str) -> dict[str, int]:
    """Bytes of each role's user data as it deploys: the bundle's URL as long as it resolves
    then (the archive's sha256 stands in for the CDK's asset hash: both are 64 hex digits).
    Measured on the node files synth rendered, not on a second rendering."""
    bucket = names.cdk_assets_bucket(account or "123456789012", region)
    url = f"s3://{bucket}/{names.bundle_object_key(node_files.bundle_sha256)}"
    sizes = {"head": len(node_files.head_user_data.encode())}
    if node_files.login_user_data is not None:
        sizes["login"] = len(with_bundle_url(node_files.login_user_data, url).encode())
    for group, text in node_files.compute_user_data.items():
        sizes[f"compute/{group}"] = len(with_bundle_url(text, url).encode())
    return sizes


def _manifests(result: SynthResult) -> CliTable:
    """On EKS no node boots from our user data (node groups boot the EKS AMI, Slurm runs in
    pods): what the synth wrote for the cluster instead are its Kubernetes manifests."""
    root = result.outdir / K8S_DIR
    files = sorted(path for path in root.rglob("*") if path.is_file())
    return table(
        f"Kubernetes manifests ({root})",
        ("file", "bytes"),
        [(str(path.relative_to(root)), f"{path.stat().st_size:,}") for path in files],
    )


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
    if cfg.orchestrator == EKS:
        return [stacks, groups, _manifests(result)]
    userdata = table(
        f"user-data (budget {USER_DATA_LIMIT} bytes per role)",
        ("role", "bytes"),
        [
            (role, f"{size:,}")
            for role, size in user_data_sizes(result.node_files, cfg.account, cfg.region).items()
        ],
    )
    return [stacks, groups, userdata]

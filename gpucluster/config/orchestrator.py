"""The config's `orchestrator` key: which control plane runs the cluster, and the keys that
mean nothing under the one chosen.

`ec2` (the default) builds a Slurm head node, login nodes and Auto Scaling groups; `eks`
builds an EKS cluster whose managed node groups carry the same compute groups, and Slurm runs
in it as Slinky's pods. Everything else in the YAML means the same under both. A key written
for the other orchestrator is refused rather than ignored: a user who set `head_node` for an
EKS cluster believes something about it that is not true.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from gpucluster.config.cluster import ClusterConfig

Orchestrator = Literal["ec2", "eks"]
EC2: Orchestrator = "ec2"
EKS: Orchestrator = "eks"

# Keys the EC2 path builds from that have no meaning on EKS, with the reason each is refused.
EC2_ONLY: dict[str, str] = {
    "head_node": "there is no head node: slurmctld runs as a pod on the EKS system node group",
    "login_nodes.instance_type": "login nodes are pods (a Slinky LoginSet), not EC2 instances; "
    "login_nodes.count still sets how many",
    "login_nodes.root_volume_gib": "login nodes are pods (a Slinky LoginSet) without a root volume of "
    "their own",
    "image": "managed node groups boot the EKS-optimized accelerated AMI of their AMI type; the Deep "
    "Learning AMI, its SSM parameter and the kernel check belong to the EC2 nodes' bootstrap",
    "rest_api": "slurmrestd is set up on the EC2 head node, with that node's security group rules",
    "health": "the DCGM checks, prolog and node replacement are run by slurmd and the head node's "
    "agents on EC2 nodes",
    "network.vpc_id": "an existing VPC is not supported on EKS yet: the control plane needs subnets in "
    "two zones, which the created VPC lays out",
}
# Per compute group (compute_groups.N.<key>).
EC2_ONLY_GROUP: dict[str, str] = {
    "placement_group": "EKS node groups here get no placement group; Capacity Block instances are "
    "co-located already",
}


def set_paths(cfg: ClusterConfig) -> list[str]:
    """The dotted paths of every EC2-only key the user wrote with a value (not defaults, not null)."""
    found = [path for path in EC2_ONLY if _written(cfg, path.split("."))]
    for index, group in enumerate(cfg.compute_groups):
        found.extend(f"compute_groups.{index}.{key}" for key in EC2_ONLY_GROUP if _written(group, [key]))
    return found


def _written(model: BaseModel | None, path: list[str]) -> bool:
    if model is None or path[0] not in model.model_fields_set:
        return False
    value = getattr(model, path[0])
    if len(path) == 1:
        return value is not None
    return isinstance(value, BaseModel) and _written(value, path[1:])


def refusal(cfg: ClusterConfig) -> tuple[str, str] | None:
    """(field path, message) naming every key that does not apply to the chosen orchestrator;
    None when all apply."""
    if cfg.orchestrator != EKS:
        return None
    found = set_paths(cfg)
    if not found:
        return None
    reasons = "; ".join(f"{path}: {_reason(path)}" for path in found)
    return found[0], (
        f"orchestrator is eks, and these keys apply only to orchestrator ec2: {', '.join(found)} "
        f"({reasons}); remove them, or set orchestrator: ec2"
    )


def _reason(path: str) -> str:
    if path in EC2_ONLY:
        return EC2_ONLY[path]
    return EC2_ONLY_GROUP[path.rsplit(".", 1)[1]]

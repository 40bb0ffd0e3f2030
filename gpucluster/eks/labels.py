"""The Kubernetes node labels and taints of a compute group's node group, written once: the
EKS stack puts them on the managed node group, the Slinky NodeSet selects and tolerates them.

A GPU node group is tainted so that nothing but its NodeSet lands on it: a stray pod would
hold a GPU or an EFA device that Slurm counts as the node's. The key is nvidia.com/gpu, which
the NVIDIA device plugin tolerates by default (`operator: Exists`); the EFA device plugin and
the CSI node plugins that must run there need a toleration for it too. The value names the
group, so one group's NodeSet never tolerates another group's nodes.
"""

from __future__ import annotations

from dataclasses import dataclass

# The label key prefix owned by gpucluster, and the compute group's label: written where the
# EKS topology writer (an agent module that imports nothing else) reads it too.
from gpucluster.agents.cluster_names import COMPUTE_GROUP_LABEL as COMPUTE_GROUP_LABEL
from gpucluster.agents.cluster_names import LABEL_PREFIX as LABEL_PREFIX

# The system node group's label: slurmctld, slurmrestd, the login pods and the operator.
SYSTEM_ROLE_LABEL = f"{LABEL_PREFIX}/role"
SYSTEM_ROLE = "system"
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_EFFECT = "NoSchedule"
# Kubernetes' taint effects as AWS::EKS::Nodegroup's Taints[].Effect spells them.
EKS_EFFECTS = {
    "NoSchedule": "NO_SCHEDULE",
    "NoExecute": "NO_EXECUTE",
    "PreferNoSchedule": "PREFER_NO_SCHEDULE",
}


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    # Kubernetes' spelling ("NoSchedule"); EKS managed node groups take "NO_SCHEDULE".
    effect: str

    @property
    def eks_effect(self) -> str:
        """The effect as AWS::EKS::Nodegroup's Taints[].Effect spells it."""
        return EKS_EFFECTS[self.effect]

    def toleration(self) -> dict[str, str]:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


def compute_group_labels(group: str) -> dict[str, str]:
    """The labels of the node group that runs compute group `group`."""
    return {COMPUTE_GROUP_LABEL: group}


def compute_group_taints(group: str) -> tuple[Taint, ...]:
    return (Taint(GPU_TAINT_KEY, group, GPU_TAINT_EFFECT),)


def any_gpu_group_toleration() -> dict[str, str]:
    """For the DaemonSets every GPU node needs (device plugins): the GPU taint of any group."""
    return {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": GPU_TAINT_EFFECT}


def system_labels() -> dict[str, str]:
    return {SYSTEM_ROLE_LABEL: SYSTEM_ROLE}

"""Values for the NVIDIA and EFA device plugin charts: the DaemonSets that advertise
`nvidia.com/gpu` and `vpc.amazonaws.com/efa` on the GPU nodes, which the NodeSets' limits ask
for (slinky_values.gpu_limits). Without them no slurmd pod is ever scheduled.

Both run only on the compute groups' nodes and tolerate the GPU taint of every group
(labels.py), whatever group value it carries.
"""

from __future__ import annotations

from typing import Any

from gpucluster.eks import labels
from gpucluster.resolved import ResolvedCluster

# The label the kubelet puts on every node: the EFA chart selects nodes by instance type.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


def _on_compute_nodes() -> dict[str, Any]:
    term = {"matchExpressions": [{"key": labels.COMPUTE_GROUP_LABEL, "operator": "Exists"}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def nvidia_values() -> dict[str, Any]:
    """The chart's own affinity wants node-feature-discovery's labels, which EKS nodes lack;
    ours selects the compute groups' node-group label instead."""
    return {"affinity": _on_compute_nodes(), "tolerations": [labels.any_gpu_group_toleration()]}


def efa_instance_types(resolved: ResolvedCluster) -> list[str]:
    """The instance types of the groups with EFA, in group order; [] installs no EFA plugin."""
    found: list[str] = []
    for group in resolved.groups:
        if group.efa_count and group.instance.name not in found:
            found.append(group.instance.name)
    return found


def efa_values(resolved: ResolvedCluster) -> dict[str, Any]:
    """The chart picks its nodes by an instance-type list of its own release, which may predate
    ours (p5en, p6); it is replaced by the cluster's EFA instance types."""
    return {
        "supportedInstanceLabels": {"keys": [INSTANCE_TYPE_LABEL], "values": efa_instance_types(resolved)},
        "tolerations": [labels.any_gpu_group_toleration()],
    }

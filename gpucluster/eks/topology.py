"""Slurm's tree topology on EKS, from the same EC2 topology reader as the EC2 path.

Slinky v1.2.1 places a NodeSet's Slurm node by its Kubernetes node's annotation ANNOTATION
(api/v1beta1/well_known.go; docs/usage/topology.md): the operator copies it to the slurmd
pod, whose entrypoint registers with `--conf "... Topology=<annotation>"`
(SlinkyProject/containers, slurmd-entrypoint.sh, POD_TOPOLOGY), and after registration it
sets the Slurm node's topology to it through slurmrestd (nodeset_sync.go, syncSlurmTopology).
The value is the `Topology=` unit the EC2 path's node registers with (ec2_topology.topology_unit:
`default:ec2:<network nodes>`, or `default:ec2:flat` for a type EC2 does not describe), so a
node is placed under the same switches on both orchestrators. Slurm needs the root switch in
topology.conf before it places a dynamic node under it: the controller gets the EC2 path's
empty tree (the root and the flat leaf) and the EC2 path's TopologyPlugin.

Nothing in Kubernetes writes the annotation from EC2: `node_annotations` computes it from a
node list and a DescribeInstanceTopology answer (`gpucluster topology annotations`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpucluster.agents.ec2_topology import (
    DESCRIBED_TYPES,
    Placement,
    TopologyError,
    build,
    render_conf,
    topology_unit,
)
from gpucluster.eks.labels import COMPUTE_GROUP_LABEL
from gpucluster.slurm.site import SlurmSite

ANNOTATION = "topology.slinky.slurm.net/spec"
TOPOLOGY_CONF = "topology.conf"
# The kubelet's well-known label (kubernetes.io/docs/reference/labels-annotations-taints).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The AWS cloud provider's providerID: aws:///<zone>/<instance id>.
_PROVIDER_ID = re.compile(r"^aws:///[a-z0-9-]*/(i-[0-9a-f]{8}(?:[0-9a-f]{9})?)$")


def topology_plugin() -> str:
    """slurm.conf's TopologyPlugin, the EC2 path's (templates/slurm/slurm.conf.j2)."""
    return SlurmSite().topology_plugin


def topology_conf(cluster: str) -> str:
    """The controller's topology.conf: the EC2 path's tree before any node is placed. Nodes
    join it at registration and by the operator; the file is not rewritten."""
    return render_conf(
        build((), {}),
        f"topology.conf of gpucluster {cluster} on EKS: Slinky places each node under the switches\n"
        f"its Kubernetes node's {ANNOTATION} annotation names (gpucluster topology annotations)",
    )


@dataclass(frozen=True)
class ComputeNode:
    """A Kubernetes node of a compute node group."""

    name: str
    instance_id: str
    instance_type: str


def _field(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise TopologyError(where, f"must be a non-empty string, got {value!r}", what)
    return value


def parse_nodes(doc: Any) -> list[ComputeNode]:
    """The compute nodes (COMPUTE_GROUP_LABEL) of `kubectl get nodes -o json`."""
    fix = "save the output of `kubectl get nodes -o json`"
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise TopologyError("items", "missing: expected an object with an 'items' list", fix)
    nodes = []
    for index, item in enumerate(doc["items"]):
        where = f"items[{index}]"
        if not isinstance(item, dict):
            raise TopologyError(where, f"expected an object, got {type(item).__name__}", fix)
        metadata = item.get("metadata") or {}
        labels = metadata.get("labels") or {}
        if COMPUTE_GROUP_LABEL not in labels:
            continue
        name = _field(metadata.get("name"), f"{where}.metadata.name", fix)
        provider_id = _field((item.get("spec") or {}).get("providerID"), f"{where}.spec.providerID", fix)
        match = _PROVIDER_ID.match(provider_id)
        if match is None:
            raise TopologyError(
                f"{where}.spec.providerID",
                f"'{provider_id}' is not an EC2 instance's provider id",
                "EKS nodes have aws:///<zone>/<instance id>",
            )
        instance_type = _field(labels.get(INSTANCE_TYPE_LABEL), f"{where}.metadata.labels", fix)
        nodes.append(ComputeNode(name, match.group(1), instance_type))
    return nodes


def node_annotations(nodes: list[ComputeNode], placements: list[Placement]) -> dict[str, str]:
    """Kubernetes node name -> the annotation's value, as the EC2 path places the same
    instances: a described type under its network nodes, any other type under the flat
    switch. A described type EC2 has not placed yet gets none and takes no job until it is
    placed, as on EC2 (topology_agent)."""
    flat = [node.name for node in nodes if node.instance_type not in DESCRIBED_TYPES]
    described = {node.instance_id: node.name for node in nodes if node.instance_type in DESCRIBED_TYPES}
    topology = build(placements, described, flat)
    return {name: topology_unit(path) for name, path in sorted(topology.paths.items())}


def annotate_commands(annotations: Mapping[str, str]) -> list[str]:
    """`kubectl annotate` for each node; --overwrite moves a node whose place changed."""
    return [
        f"kubectl annotate node {name} {ANNOTATION}={unit} --overwrite"
        for name, unit in sorted(annotations.items())
    ]

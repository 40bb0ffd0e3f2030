"""Each EKS compute node's Slinky topology annotation, from a Kubernetes node list and EC2's
DescribeInstanceTopology answer: pure, no AWS call and no Kubernetes call.

Slinky v1.2 places a NodeSet's Slurm node by its Kubernetes node's annotation ANNOTATION and
sets the Slurm node's topology to it on every reconcile, empty or not (slurm-operator
nodeset_sync.go syncSlurmTopology). The value is the `Topology=` unit the EC2 path gives the
same instance (ec2_topology.topology_unit), so both orchestrators place it under the same
switches. `gpucluster topology annotations` (by hand) and the EKS stack's topology writer
(every minute, topology_writer) both compute it here.

A node of a described type that EC2 does not describe yet (just launched) goes under the flat
switch until it is placed, where the EC2 head leaves it unplaced: under topology/tree a Slurm
node in no switch takes no job, and on EKS the operator would otherwise keep it there. The
next run after EC2 describes it moves it to its leaf (the annotation changes, the operator,
which watches Nodes, sets the Slurm node's topology again).

Standard library only (ships in the writer's Lambda package; the synth imports it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpucluster.agents.cluster_names import COMPUTE_GROUP_LABEL
from gpucluster.agents.ec2_topology import DESCRIBED_TYPES, Placement, TopologyError, build, topology_unit

ANNOTATION = "topology.slinky.slurm.net/spec"
# The kubelet's well-known label (kubernetes.io/docs/reference/labels-annotations-taints).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# The AWS cloud provider's providerID: aws:///<zone>/<instance id>.
_PROVIDER_ID = re.compile(r"^aws:///[a-z0-9-]*/(i-[0-9a-f]{8}(?:[0-9a-f]{9})?)$")
_FIX = "save the output of `kubectl get nodes -o json`"


@dataclass(frozen=True)
class ComputeNode:
    """A Kubernetes node of a compute node group."""

    name: str
    instance_id: str
    instance_type: str
    # The node's ANNOTATION now, "" when it has none.
    annotation: str = ""


def _field(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise TopologyError(where, f"must be a non-empty string, got {value!r}", _FIX)
    return value


def parse_node(item: Any, where: str) -> ComputeNode | None:
    """One item of a node list; None for a node of no compute group (the system nodes)."""
    if not isinstance(item, dict):
        raise TopologyError(where, f"expected an object, got {type(item).__name__}", _FIX)
    metadata = item.get("metadata") or {}
    labels = metadata.get("labels") or {}
    if COMPUTE_GROUP_LABEL not in labels:
        return None
    name = _field(metadata.get("name"), f"{where}.metadata.name")
    provider_id = _field((item.get("spec") or {}).get("providerID"), f"{where}.spec.providerID")
    match = _PROVIDER_ID.match(provider_id)
    if match is None:
        raise TopologyError(
            f"{where}.spec.providerID",
            f"'{provider_id}' is not an EC2 instance's provider id",
            "EKS nodes have aws:///<zone>/<instance id>",
        )
    instance_type = _field(labels.get(INSTANCE_TYPE_LABEL), f"{where}.metadata.labels")
    annotation = (metadata.get("annotations") or {}).get(ANNOTATION, "")
    return ComputeNode(name, match.group(1), instance_type, annotation if isinstance(annotation, str) else "")


def node_items(doc: Any) -> list[Any]:
    """The items of a node list (`kubectl get nodes -o json`, or the API's NodeList)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise TopologyError("items", "missing: expected an object with an 'items' list", _FIX)
    return list(doc["items"])


def parse_nodes(doc: Any) -> list[ComputeNode]:
    """The compute nodes (COMPUTE_GROUP_LABEL) of a node list; the first bad one raises."""
    found = (parse_node(item, f"items[{index}]") for index, item in enumerate(node_items(doc)))
    return [node for node in found if node is not None]


def described(nodes: Iterable[ComputeNode]) -> list[str]:
    """The instances to ask DescribeInstanceTopology about: those of a type it describes."""
    return sorted({node.instance_id for node in nodes if node.instance_type in DESCRIBED_TYPES})


def node_annotations(nodes: Iterable[ComputeNode], placements: Iterable[Placement]) -> dict[str, str]:
    """Kubernetes node name -> the annotation's value for every compute node: a node EC2 has
    placed under its network nodes, any other under the flat switch (see the module's note)."""
    nodes = list(nodes)
    names = {node.instance_id: node.name for node in nodes if node.instance_type in DESCRIBED_TYPES}
    placed = {p.instance_id for p in placements if p.instance_id in names}
    flat = [node.name for node in nodes if node.instance_id not in placed]
    topology = build(placements, names, flat)
    return {name: topology_unit(path) for name, path in sorted(topology.paths.items())}


def unplaced(nodes: Iterable[ComputeNode], placements: Iterable[Placement]) -> list[str]:
    """The nodes of a described type that EC2 does not describe yet (flat until it does)."""
    placed = {p.instance_id for p in placements}
    return sorted(n.name for n in nodes if n.instance_type in DESCRIBED_TYPES and n.instance_id not in placed)


def changes(nodes: Iterable[ComputeNode], annotations: Mapping[str, str]) -> dict[str, str]:
    """The nodes whose annotation is not the value they should have, and that value."""
    return {
        node.name: annotations[node.name]
        for node in nodes
        if node.name in annotations and node.annotation != annotations[node.name]
    }

"""EC2's network topology as Slurm's tree topology: pure, no AWS call and no Slurm call.

`DescribeInstanceTopology` answers `Instances[].{InstanceId, InstanceType, GroupName,
NetworkNodes, AvailabilityZone, ZoneId, CapacityBlockId}`; `NetworkNodes` lists one
network node per layer of the AWS network, top layer first, the node the instance plugs
into last (3 nodes for p4d/p5/p5en/trn2, 4 for p6-b200; EC2 User Guide, "How Amazon EC2
topology works"). Those nodes become Slurm switches under one root switch, ROOT_SWITCH
(the Availability Zone's fabric: every cluster is in one AZ, so a job may span any two
switches), and each instance's last network node is the leaf switch of its Slurm node.
Nodes of instance types EC2 does not describe hang from one more leaf, FLAT_SWITCH, the
flat default: they are all equal to Slurm.

The head's topology agent (topology_agent) writes `render_conf` to topology.conf and
places each registered node with `scontrol update NodeName=... Topology=<unit>`
(`topology_unit`); `gpucluster topology render` prints the same file from a saved answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpucluster.agents.cluster_names import INSTANCE_ID

# Slurm names the topology a topology.conf describes "default" (topology.shtml, "Dynamic
# Topology"); a node's unit is that name, then its switches from the root down, ':'-joined.
TOPOLOGY_NAME = "default"
ROOT_SWITCH = "ec2"
FLAT_SWITCH = "flat"
# Switch names go into hostlist expressions (Switches=a,b) and ':'-joined units; EC2's are
# `nn-` and hex digits. Slurm refuses names longer than HOST_NAME_MAX (64).
_NETWORK_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_INSTANCE_ID = re.compile(f"^{INSTANCE_ID}$")
# Instance types DescribeInstanceTopology describes (EC2 User Guide, "Prerequisites for
# Amazon EC2 topology", Instance types); every other type goes under FLAT_SWITCH.
DESCRIBED_TYPES = frozenset(
    {
        *(f"g6e.{size}" for size in ("xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge")),
        "g6e.24xlarge",
        "g6e.48xlarge",
        *(f"g7e.{size}" for size in ("2xlarge", "4xlarge", "8xlarge", "12xlarge", "24xlarge", "48xlarge")),
        "hpc6a.48xlarge",
        "hpc6id.32xlarge",
        "hpc7g.4xlarge",
        "hpc7g.8xlarge",
        "hpc7g.16xlarge",
        "hpc7a.12xlarge",
        "hpc7a.24xlarge",
        "hpc7a.48xlarge",
        "hpc7a.96xlarge",
        "hpc8a.96xlarge",
        "p3dn.24xlarge",
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6e-gb200.36xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
        "trn1.2xlarge",
        "trn1.32xlarge",
        "trn1n.32xlarge",
        "trn2.48xlarge",
        "trn2u.48xlarge",
    }
)


class TopologyError(ValueError):
    """A DescribeInstanceTopology answer or a name map that cannot be a tree; `field` says where."""

    def __init__(self, field: str, what: str, fix: str) -> None:
        super().__init__(f"{field}: {what}; {fix}")
        self.field = field
        self.what = what
        self.fix = fix


@dataclass(frozen=True)
class Placement:
    """Where EC2 says one instance is: its network nodes, top layer first."""

    instance_id: str
    instance_type: str
    network_nodes: tuple[str, ...]

    @property
    def leaf(self) -> str:
        return self.network_nodes[-1]


def _text(value: Any, field: str, fix: str) -> str:
    if not isinstance(value, str) or not value:
        raise TopologyError(field, f"must be a non-empty string, got {value!r}", fix)
    return value


def parse_instance(entry: Any, where: str) -> Placement:
    if not isinstance(entry, dict):
        raise TopologyError(where, f"expected an object, got {type(entry).__name__}", "pass the API's answer")
    instance_id = _text(entry.get("InstanceId"), f"{where}.InstanceId", "every instance names its id")
    if not _INSTANCE_ID.match(instance_id):
        raise TopologyError(
            f"{where}.InstanceId", f"'{instance_id}' is not an EC2 instance id", "i- and 8 or 17 hex digits"
        )
    instance_type = _text(entry.get("InstanceType"), f"{where}.InstanceType", "every instance names its type")
    nodes = entry.get("NetworkNodes")
    if not isinstance(nodes, list) or not nodes:
        raise TopologyError(
            f"{where}.NetworkNodes",
            f"must be a non-empty list of network node ids, got {nodes!r}",
            "pass DescribeInstanceTopology's answer unchanged",
        )
    for index, node in enumerate(nodes):
        name = _text(node, f"{where}.NetworkNodes[{index}]", "network nodes are ids like nn-0123abcd")
        if not _NETWORK_NODE.match(name) or name in (ROOT_SWITCH, FLAT_SWITCH):
            raise TopologyError(
                f"{where}.NetworkNodes[{index}]",
                f"'{name}' cannot be a Slurm switch name",
                f"ids are letters, digits, '.', '_' and '-', up to 64 characters, not {ROOT_SWITCH} or "
                f"{FLAT_SWITCH}",
            )
    if len(set(nodes)) != len(nodes):
        raise TopologyError(
            f"{where}.NetworkNodes", f"{nodes} names one network node twice: a cycle", "this is not a tree"
        )
    return Placement(instance_id, instance_type, tuple(nodes))


def parse_response(doc: Any) -> list[Placement]:
    """Every instance of a DescribeInstanceTopology answer (`aws ec2 describe-instance-topology`
    prints the pages joined); the same instance twice with the same nodes counts once."""
    if not isinstance(doc, dict) or not isinstance(doc.get("Instances"), list):
        raise TopologyError(
            "Instances",
            "missing: expected an object with an 'Instances' list",
            "save the output of `aws ec2 describe-instance-topology --output json`",
        )
    found: dict[str, Placement] = {}
    for index, entry in enumerate(doc["Instances"]):
        placement = parse_instance(entry, f"Instances[{index}]")
        seen = found.get(placement.instance_id)
        if seen is not None and seen != placement:
            raise TopologyError(
                f"Instances[{index}]",
                f"instance {placement.instance_id} is in two places: {'/'.join(seen.network_nodes)} and "
                f"{'/'.join(placement.network_nodes)}",
                "describe the instances again; an instance has one place",
            )
        found[placement.instance_id] = placement
    check_tree(found.values())
    return list(found.values())


def check_tree(placements: Iterable[Placement]) -> None:
    """Each network node must have one parent and one layer, and the parents must not loop."""
    parent: dict[str, str | None] = {}
    layer: dict[str, int] = {}
    owner: dict[str, str] = {}
    for placement in placements:
        above: str | None = None
        for depth, node in enumerate(placement.network_nodes):
            if node in parent and (parent[node] != above or layer[node] != depth):
                raise TopologyError(
                    f"instance {placement.instance_id}",
                    f"network node {node} sits under {above or 'the top'} at layer {depth + 1}, but under "
                    f"{parent[node] or 'the top'} at layer {layer[node] + 1} for instance {owner[node]}",
                    "a network node has one parent: this is not a tree (a cycle or a node in two places)",
                )
            parent[node], layer[node] = above, depth
            owner.setdefault(node, placement.instance_id)
            above = node
    leaves = {placement.leaf for placement in placements}
    for placement in placements:
        for node in placement.network_nodes[:-1]:
            if node in leaves:
                raise TopologyError(
                    f"instance {placement.instance_id}",
                    f"network node {node} holds instances and also has network nodes under it",
                    "an instance plugs into the bottom layer only: this is not a tree",
                )


@dataclass(frozen=True)
class SlurmTopology:
    """Slurm's tree: each switch's children (switches or node names) and each node's path."""

    children: dict[str, list[str]] = field(default_factory=dict)
    nodes: dict[str, list[str]] = field(default_factory=dict)
    # Node name -> the switches from the root down to its leaf.
    paths: dict[str, tuple[str, ...]] = field(default_factory=dict)


def build(
    placements: Iterable[Placement], names: Mapping[str, str], flat: Iterable[str] = ()
) -> SlurmTopology:
    """The tree of the Slurm nodes `names` maps instance ids to, plus the node names in
    `flat` under FLAT_SWITCH. An instance without a name is left out (not this cluster's)."""
    topology = SlurmTopology(children={ROOT_SWITCH: [FLAT_SWITCH]}, nodes={FLAT_SWITCH: []})
    for placement in sorted(placements, key=lambda p: p.instance_id):
        node = names.get(placement.instance_id)
        if node is None:
            continue
        path = (ROOT_SWITCH, *placement.network_nodes)
        _place(topology, node, path)
    for node in sorted(set(flat)):
        _place(topology, node, (ROOT_SWITCH, FLAT_SWITCH))
    return topology


def _place(topology: SlurmTopology, node: str, path: tuple[str, ...]) -> None:
    if node in topology.paths:
        raise TopologyError(
            f"node {node}",
            f"is in two places: {'/'.join(topology.paths[node])} and {'/'.join(path)}",
            "give each instance its own node name",
        )
    for above, below in zip(path, path[1:], strict=False):
        children = topology.children.setdefault(above, [])
        if below not in children:
            children.append(below)
    topology.nodes.setdefault(path[-1], []).append(node)
    topology.paths[node] = path


def topology_unit(path: tuple[str, ...]) -> str:
    """`Topology=` of `scontrol update` and `slurmd --conf`: the topology's name, then the
    switches from the root to the leaf. Slurm creates the switches below the root that it
    does not know yet (topology_tree.c, topology_p_add_rm_node)."""
    return ":".join((TOPOLOGY_NAME, *path))


def render_conf(topology: SlurmTopology, header: str = "") -> str:
    """topology.conf: the root first, then every switch under it, leaves with their nodes."""
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    order: list[str] = []
    pending = [ROOT_SWITCH]
    while pending:
        switch = pending.pop(0)
        order.append(switch)
        pending.extend(sorted(topology.children.get(switch, [])))
    for switch in order:
        below = sorted(topology.children.get(switch, []))
        nodes = sorted(topology.nodes.get(switch, []))
        if below:
            lines.append(f"SwitchName={switch} Switches={','.join(below)}")
        elif nodes:
            lines.append(f"SwitchName={switch} Nodes={','.join(nodes)}")
        else:
            # An empty leaf: Slurm accepts it (switch_record.c) and a node can be placed under it.
            lines.append(f"SwitchName={switch}")
    return "\n".join(lines) + "\n"


def leaf_of(topology: SlurmTopology) -> dict[str, str]:
    """Each node's leaf switch."""
    return {node: path[-1] for node, path in topology.paths.items()}


def parse_conf(text: str) -> dict[str, str]:
    """Node name -> leaf switch, read back from a topology.conf `render_conf` wrote (the gate
    reads it to name each node's switch). Hostlist ranges (`n[1-3]`) are not expanded: the
    file this module writes lists every node by name."""
    leaves: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        switch = fields.get("SwitchName")
        if not switch:
            raise TopologyError(f"line {number}", f"'{raw.strip()}' has no SwitchName=", "not topology.conf")
        for node in filter(None, fields.get("Nodes", "").split(",")):
            if "[" in node:
                raise TopologyError(
                    f"line {number}", f"'{node}' is a hostlist range", "list every node by name"
                )
            if node in leaves and leaves[node] != switch:
                raise TopologyError(
                    f"line {number}",
                    f"node {node} is under {leaves[node]} and {switch}: an instance in two places",
                    "a node has one leaf switch",
                )
            leaves[node] = switch
    return leaves

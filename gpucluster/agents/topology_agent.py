"""Network topology: run every minute on the head node by a systemd timer.

Slurm runs the tree topology (TopologyPlugin=topology/tree). Under it a node that is in no
switch can take no job at all: the tree plugin only picks nodes under the switch it chose
(eval_nodes_tree.c), so a dynamic node that registers, in no switch, waits unused until
this agent places it; it never takes a multi-node job outside its switch. Each run:

- lists the registered compute nodes (`scontrol --future -o show nodes`), their instance
  ids (from the node names) and instance types (from their features);
- asks EC2 DescribeInstanceTopology for those instances only (by id, 100 per call,
  paginated), so nothing outside the cluster is read;
- places every node under its leaf switch with `scontrol update NodeName=...
  Topology=default:ec2:<network nodes>` when it is not there yet: slurmctld creates the
  switches it does not know (topology_tree.c) and keeps the node's place in its state
  across restarts; no reconfigure, no restart. Nodes of instance types EC2 does not
  describe go under the flat default switch; a node of a described type that EC2 does
  not describe yet (just launched) stays unplaced until a later run;
- writes the whole tree to topology.conf (atomically, only when it changed), so a
  reconfigure or a new head starts from the current tree.

A node that leaves is removed from every switch when node_cleanup deletes it (slurmctld
does that itself on `scontrol delete`); the next run drops it from topology.conf.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import runtime
from gpucluster.agents.cluster_names import COMPUTE_NODE_NAME, TOPOLOGY_CONF
from gpucluster.agents.ec2_topology import (
    DESCRIBED_TYPES,
    Placement,
    TopologyError,
    build,
    check_tree,
    parse_instance,
    render_conf,
    topology_unit,
)
from gpucluster.agents.scontrol import Runner, ScontrolError, checked, parse_records, run_command

LOG = logging.getLogger("topology")

# DescribeInstanceTopology takes at most 100 instance ids per call.
INSTANCE_BATCH = 100
# A compute node's features are its group and its instance type (slurm.node_conf).
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")


@dataclass(frozen=True)
class ComputeNode:
    name: str
    instance_id: str
    instance_type: str | None
    # What slurmctld shows as the node's Topology=, "" when it is in no switch it was given.
    topology: str


def parse_nodes(text: str) -> list[ComputeNode]:
    nodes = []
    for record in parse_records(text):
        match = COMPUTE_NODE_NAME.match(record.get("NodeName", ""))
        if not match:
            continue
        features = record.get("AvailableFeatures", "").split(",")
        types = [feature for feature in features if _INSTANCE_TYPE.match(feature)]
        nodes.append(
            ComputeNode(
                name=record["NodeName"],
                instance_id=match.group("instance_id"),
                instance_type=types[0] if types else None,
                topology=record.get("Topology", ""),
            )
        )
    return nodes


def list_nodes(run: Runner) -> list[ComputeNode]:
    return parse_nodes(checked(run(["scontrol", "--future", "-o", "show", "nodes"])).stdout)


def _describe_batch(ec2: Any, ids: list[str], found: dict[str, Placement]) -> None:
    for page in ec2.get_paginator("describe_instance_topology").paginate(InstanceIds=ids):
        for index, entry in enumerate(page.get("Instances", [])):
            placement = parse_instance(entry, f"DescribeInstanceTopology Instances[{index}]")
            found[placement.instance_id] = placement


def describe(ec2: Any, instance_ids: Sequence[str]) -> list[Placement]:
    """Where EC2 places these instances; instances it does not describe are absent.

    An id EC2 refuses (an instance terminated long ago, whose node waits for the cleanup)
    must not keep the batch's other nodes unplaced: the batch is asked again one id at a
    time and the refused ids are left out."""
    found: dict[str, Placement] = {}
    ids = sorted(set(instance_ids))
    for start in range(0, len(ids), INSTANCE_BATCH):
        batch = ids[start : start + INSTANCE_BATCH]
        try:
            _describe_batch(ec2, batch, found)
        except ClientError as err:
            if not _refused_id(err):
                raise
            for instance_id in batch:
                try:
                    _describe_batch(ec2, [instance_id], found)
                except ClientError as one:
                    if not _refused_id(one):
                        raise
                    LOG.debug("EC2 refuses instance %s: %s", instance_id, one)
    check_tree(found.values())
    return list(found.values())


def _refused_id(err: ClientError) -> bool:
    return str(err.response.get("Error", {}).get("Code", "")).startswith("InvalidInstanceID")


def write_atomically(path: Path, text: str) -> bool:
    """Replace `path` with `text` unless it holds it already; readers never see half a file."""
    try:
        if path.read_text() == text:
            return False
    except FileNotFoundError:
        pass
    with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False) as new:
        new.write(text)
        new.flush()
        os.fchmod(new.fileno(), 0o644)
        os.fsync(new.fileno())
    os.replace(new.name, path)
    return True


@dataclass(frozen=True)
class Plan:
    conf: str
    # (node, Topology= unit) for every node not yet where it belongs.
    moves: list[tuple[str, str]]
    waiting: list[str]


def plan(nodes: Iterable[ComputeNode], placements: Iterable[Placement]) -> Plan:
    nodes = list(nodes)
    described = {placement.instance_id for placement in placements}
    # A node whose type its features do not name is left where it is: it may be described.
    flat = [node.name for node in nodes if node.instance_type not in (*DESCRIBED_TYPES, None)]
    waiting = [
        node.name
        for node in nodes
        if node.instance_type is None
        or (node.instance_type in DESCRIBED_TYPES and node.instance_id not in described)
    ]
    names = {node.instance_id: node.name for node in nodes if node.instance_type in DESCRIBED_TYPES}
    topology = build(placements, names, flat)
    moves = []
    for node in nodes:
        path = topology.paths.get(node.name)
        if path is not None and node.topology != topology_unit(path):
            moves.append((node.name, topology_unit(path)))
    header = "topology.conf written by the gpucluster topology agent from EC2 DescribeInstanceTopology"
    return Plan(render_conf(topology, header), moves, sorted(waiting))


def run_once(ec2: Any, run: Runner, conf_path: Path) -> int:
    try:
        nodes = list_nodes(run)
    except ScontrolError as err:
        LOG.error("cannot list Slurm nodes, nothing placed: %s", err)
        return 1
    asked = [node.instance_id for node in nodes if node.instance_type in DESCRIBED_TYPES]
    try:
        placements = describe(ec2, asked) if asked else []
    except (BotoCoreError, ClientError) as err:
        LOG.error("cannot ask EC2 for the topology of %d instances, nothing placed: %s", len(nodes), err)
        return 1
    except TopologyError as err:
        LOG.error("EC2's topology answer is not a tree, nothing placed: %s", err)
        return 1
    result = plan(nodes, placements)
    ok = True
    for name, unit in result.moves:
        outcome = run(["scontrol", "update", f"NodeName={name}", f"Topology={unit}"])
        if outcome.returncode == 0:
            LOG.info("node %s placed at %s", name, unit)
        else:
            ok = False
            LOG.error("node %s not placed at %s: %s", name, unit, outcome.output)
    for name in result.waiting:
        LOG.warning(
            "node %s: EC2 does not describe its instance yet (or its features name no instance type); "
            "unplaced, it takes no job",
            name,
        )
    try:
        changed = write_atomically(conf_path, result.conf)
    except OSError as err:
        LOG.error("cannot write %s: %s", conf_path, err)
        return 1
    LOG.info(
        "nodes=%d placed=%d waiting=%d %s %s",
        len(nodes),
        len(result.moves),
        len(result.waiting),
        conf_path,
        "rewritten" if changed else "unchanged",
    )
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runtime.add_common_arguments(parser, cluster=False)
    parser.add_argument("--conf", type=Path, default=Path(TOPOLOGY_CONF), help="topology.conf to write")
    args = parser.parse_args(argv)
    runtime.configure_logging(args.verbose)
    try:
        region = runtime.Settings(args, os.environ).region()
    except runtime.SettingError as err:
        LOG.error("%s", err)
        return 2
    return run_once(runtime.client("ec2", region), run_command, args.conf)


if __name__ == "__main__":
    sys.exit(main())

"""Network topology on EKS: a Lambda function that an EventBridge schedule runs every minute
writes each compute node's Slinky topology annotation, as the EC2 head's topology timer places
its nodes (topology_agent).

Slurm runs topology/tree on EKS too, where a node in no switch takes no job, and Slinky sets
each Slurm node's topology from its Kubernetes node's annotation (node_annotations). Each run:

- lists the compute nodes (the compute-group label) from the Kubernetes API, as the
  function's IAM role (kube_api: its access entry's group may get, list and patch nodes);
- asks EC2 DescribeInstanceTopology for those of a described type only (by id, 100 per call;
  topology_agent.describe, the head's own reader);
- computes every node's annotation (node_annotations: placed under its network nodes, or
  flat) and patches only the nodes whose annotation differs, one JSON merge patch each; one
  node's failed patch stops no other.

A run that cannot list the nodes or read EC2 changes nothing and fails (the function's Errors
metric counts it); the next minute tries again.

Settings (the function's environment, written by the EKS stack): GPUCLUSTER_CLUSTER and
kube_api's ENDPOINT_SETTING and CA_SETTING.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import runtime
from gpucluster.agents.cluster_names import CLUSTER_SETTING, COMPUTE_GROUP_LABEL
from gpucluster.agents.ec2_topology import TopologyError
from gpucluster.agents.kube_api import (
    CA_SETTING,
    ENDPOINT_SETTING,
    KubeApi,
    KubeApiError,
    opener,
    tls_context,
    token,
)
from gpucluster.agents.node_annotations import (
    ANNOTATION,
    ComputeNode,
    changes,
    described,
    node_annotations,
    parse_node,
    unplaced,
)
from gpucluster.agents.topology_agent import describe

LOG = logging.getLogger("topology-writer")


class RunFailed(RuntimeError):
    """A run that left nodes unplaced or wrongly placed; the log says which and why."""


def compute_nodes(api: KubeApi) -> tuple[list[ComputeNode], int]:
    """The compute nodes, and how many listed items could not be read (each logged)."""
    nodes, bad = [], 0
    for index, item in enumerate(api.list_nodes(COMPUTE_GROUP_LABEL)):
        try:
            node = parse_node(item, f"node list items[{index}]")
        except TopologyError as err:
            LOG.error("%s; that node is not placed", err)
            bad += 1
            continue
        if node is not None:
            nodes.append(node)
    return nodes, bad


def run_once(ec2: Any, api: KubeApi) -> tuple[int, int]:
    """One pass: how many nodes it patched, and how many it could not read or patch (raises
    when it could not list the nodes or read EC2: then nothing was patched)."""
    nodes, unread = compute_nodes(api)
    try:
        placements = describe(ec2, described(nodes))
    except (BotoCoreError, ClientError, TopologyError) as err:
        raise RunFailed(f"cannot read EC2's topology of {len(nodes)} nodes, nothing patched: {err}") from err
    wanted = node_annotations(nodes, placements)
    for name in unplaced(nodes, placements):
        LOG.warning("node %s: EC2 does not describe its instance yet; flat until it does", name)
    patched, failed = 0, 0
    for name, unit in sorted(changes(nodes, wanted).items()):
        try:
            api.annotate_node(name, ANNOTATION, unit)
        except KubeApiError as err:
            failed += 1
            LOG.error("node %s not placed at %s: %s", name, unit, err)
        else:
            patched += 1
            LOG.info("node %s placed at %s", name, unit)
    LOG.info("nodes=%d patched=%d failed=%d unreadable=%d", len(nodes), patched, failed, unread)
    return patched, failed + unread


def handler(event: object, context: object) -> dict[str, int]:
    """The Lambda entry point. A run with a node not placed raises, so it counts in the
    function's Errors metric; every other node was still placed."""
    logging.getLogger().setLevel(logging.INFO)
    cluster = os.environ[CLUSTER_SETTING]
    region = os.environ["AWS_REGION"]
    try:
        api = KubeApi(
            os.environ[ENDPOINT_SETTING],
            token(runtime.client("sts", region), cluster),
            opener(tls_context(os.environ[CA_SETTING])),
        )
        patched, failed = run_once(runtime.client("ec2", region), api)
    except KubeApiError as err:
        raise RunFailed(f"cannot list the compute nodes of {cluster}, nothing patched: {err}") from err
    if failed:
        raise RunFailed(f"{failed} compute node(s) not placed; see the log above")
    return {"patched": patched}

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

Each compute node's annotation is computed by gpucluster.agents.node_annotations, for the EKS
stack's topology writer (a scheduled function that patches the nodes every minute,
constructs_lib/eks/topology_writer.py) and for `gpucluster topology annotations` (by hand).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpucluster.agents.ec2_topology import build, render_conf
from gpucluster.agents.node_annotations import ANNOTATION as ANNOTATION
from gpucluster.agents.node_annotations import INSTANCE_TYPE_LABEL as INSTANCE_TYPE_LABEL
from gpucluster.agents.node_annotations import node_annotations as node_annotations
from gpucluster.agents.node_annotations import parse_nodes as parse_nodes
from gpucluster.agents.node_annotations import unplaced as unplaced
from gpucluster.agents.topology_writer_settings import KUBERNETES_GROUP
from gpucluster.command_lines import command_line
from gpucluster.slurm.site import SlurmSite

TOPOLOGY_CONF = "topology.conf"
# The ClusterRole (and its binding) of the topology writer's Kubernetes group.
WRITER_ROLE = "gpucluster-topology-writer"


def topology_plugin() -> str:
    """slurm.conf's TopologyPlugin, the EC2 path's (templates/slurm/slurm.conf.j2)."""
    return SlurmSite().topology_plugin


def topology_conf(cluster: str) -> str:
    """The controller's topology.conf: the EC2 path's tree before any node is placed. Nodes
    join it at registration and by the operator; the file is not rewritten."""
    return render_conf(
        build((), {}),
        f"topology.conf of gpucluster {cluster} on EKS: Slinky places each node under the switches\n"
        f"its Kubernetes node's {ANNOTATION} annotation names (the topology writer sets it)",
    )


RBAC_API = "rbac.authorization.k8s.io"


def writer_rbac() -> list[dict[str, Any]]:
    """What the topology writer's group may do in Kubernetes: read and patch nodes, nothing else
    (its EKS access entry maps its IAM role to KUBERNETES_GROUP)."""
    return [
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": WRITER_ROLE},
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}],
        },
        {
            "apiVersion": f"{RBAC_API}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": WRITER_ROLE},
            "roleRef": {"apiGroup": RBAC_API, "kind": "ClusterRole", "name": WRITER_ROLE},
            "subjects": [{"apiGroup": RBAC_API, "kind": "Group", "name": KUBERNETES_GROUP}],
        },
    ]


def annotate_commands(annotations: Mapping[str, str]) -> list[str]:
    """`kubectl annotate` for each node; --overwrite moves a node whose place changed. The
    names and units are the node list's and EC2's, so each word is quoted (command_lines)."""
    return [
        command_line("kubectl", "annotate", "node", name, f"{ANNOTATION}={unit}", "--overwrite")
        for name, unit in sorted(annotations.items())
    ]

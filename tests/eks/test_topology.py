"""Topology on EKS: the controller gets the EC2 path's plugin and root switch, and each
Kubernetes node's annotation is the `Topology=` unit the EC2 path gives the same instance."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from gpucluster.agents.ec2_topology import ROOT_SWITCH, TOPOLOGY_NAME, TopologyError, parse_response
from gpucluster.agents.topology_writer_settings import KUBERNETES_GROUP
from gpucluster.cli import app
from gpucluster.eks import labels, topology
from gpucluster.slurm.conf import render_slurm_files
from tests.eks.conftest import SHAPES
from tests.eks.test_semantics import _config_file, _slurm_conf_lines, nodesets
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh
from tests.topology.shapes import P5

DESCRIBED = P5["Instances"]
UNDESCRIBED_ID = "i-0a1b2c3d4e5f00099"
UNPLACED_ID = "i-0a1b2c3d4e5f00098"


def k8s_node(name: str, instance_id: str, instance_type: str, group: str | None = "gpu") -> dict:
    node_labels = {topology.INSTANCE_TYPE_LABEL: instance_type}
    if group is not None:
        node_labels.update(labels.compute_group_labels(group))
    return {
        "metadata": {"name": name, "labels": node_labels},
        "spec": {"providerID": f"aws:///us-east-2a/{instance_id}"},
    }


def node_list() -> dict:
    items = [
        k8s_node(f"ip-10-0-0-{i}", entry["InstanceId"], entry["InstanceType"])
        for i, entry in enumerate(DESCRIBED)
    ]
    items.append(k8s_node("ip-10-0-1-1", UNDESCRIBED_ID, "g5.12xlarge", "small"))
    items.append(k8s_node("ip-10-0-1-2", UNPLACED_ID, "p5.48xlarge"))  # launched, not described yet
    items.append(k8s_node("ip-10-0-9-9", "i-0a1b2c3d4e5f00097", "m7i.xlarge", group=None))  # system
    return {"items": items}


def switches(conf: str) -> set[str]:
    return set(re.findall(r"^SwitchName=(\S+)", conf, re.M))


@pytest.mark.parametrize("name", [*SHAPES, "example-mixed"])
def test_controller_runs_the_ec2_paths_topology_plugin_and_root(rendered, clusters, name):
    ec2_conf = render_slurm_files(clusters[name]).slurm_conf
    (ec2_plugin,) = re.findall(r"^TopologyPlugin=(\S+)$", ec2_conf, re.M)
    assert f"TopologyPlugin={ec2_plugin}" in _slurm_conf_lines(rendered[name]).splitlines()
    conf = _config_file(rendered[name], topology.TOPOLOGY_CONF)
    # Slurm places a dynamic node only under a root switch topology.conf already has.
    assert {ROOT_SWITCH, "flat"} <= switches(conf)


@pytest.mark.parametrize("name", [*SHAPES, "example-mixed"])
def test_no_nodeset_fixes_its_own_topology(rendered, clusters, name):
    # The annotation is the one source: a Topology= in extraConf would register the node
    # elsewhere than where the operator then moves it.
    for _, nodeset in nodesets(rendered, clusters, name):
        assert "Topology=" not in nodeset["spec"]["extraConf"]


def test_annotations_are_the_ec2_paths_units_under_the_controllers_root(rendered):
    placed = topology.node_annotations(topology.parse_nodes(node_list()), parse_response(P5))
    first = DESCRIBED[0]
    assert placed["ip-10-0-0-0"] == ":".join((TOPOLOGY_NAME, ROOT_SWITCH, *first["NetworkNodes"]))
    assert placed["ip-10-0-1-1"] == f"{TOPOLOGY_NAME}:{ROOT_SWITCH}:flat"
    # A described type EC2 has not placed yet is flat until it is (schedulable meanwhile); a
    # system node gets none.
    assert placed["ip-10-0-1-2"] == f"{TOPOLOGY_NAME}:{ROOT_SWITCH}:flat"
    assert "ip-10-0-9-9" not in placed
    assert len(placed) == len(DESCRIBED) + 2
    known = switches(_config_file(rendered["p5"], topology.TOPOLOGY_CONF))
    for unit in placed.values():
        name, root, *_ = unit.split(":")
        assert (name, root) == (TOPOLOGY_NAME, ROOT_SWITCH) and root in known
    assert f"{topology.ANNOTATION}={placed['ip-10-0-1-1']}" in topology.annotate_commands(placed)[-1]


def test_a_node_without_an_ec2_provider_id_is_refused():
    doc = {"items": [k8s_node("n1", "i-0a1b2c3d4e5f00001", "p5.48xlarge")]}
    doc["items"][0]["spec"]["providerID"] = "kind://docker/n1"
    with pytest.raises(TopologyError, match=r"items\[0\].spec.providerID"):
        topology.parse_nodes(doc)


def _annotations_cli(tmp_path, nodes: dict | str):
    (tmp_path / "describe.json").write_text(json.dumps(P5))
    (tmp_path / "nodes.json").write_text(nodes if isinstance(nodes, str) else json.dumps(nodes))
    args = [
        "topology",
        "annotations",
        str(tmp_path / "describe.json"),
        "--nodes",
        str(tmp_path / "nodes.json"),
    ]
    return CliRunner().invoke(app, args)


def test_cli_prints_one_kubectl_annotate_per_placed_node(tmp_path):
    result = _annotations_cli(tmp_path, node_list())
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == len(DESCRIBED) + 2
    assert f"kubectl annotate node ip-10-0-1-1 {topology.ANNOTATION}=default:ec2:flat --overwrite" in lines
    assert f"kubectl annotate node ip-10-0-1-2 {topology.ANNOTATION}=default:ec2:flat --overwrite" in lines
    assert "1 node(s) EC2 does not describe yet, flat until it does: ip-10-0-1-2" in result.stderr


def test_cli_output_piped_to_sh_annotates_each_placed_node(tmp_path):
    result = _annotations_cli(tmp_path, node_list())
    assert result.exit_code == 0, result.output
    placed = topology.node_annotations(topology.parse_nodes(node_list()), parse_response(P5))
    run = pipe_to_sh(result.stdout, ["kubectl"], tmp_path)
    assert (run.returncode, run.strays) == (0, [])
    assert [call.argv for call in run.calls] == [
        ["annotate", "node", name, f"{topology.ANNOTATION}={unit}", "--overwrite"]
        for name, unit in sorted(placed.items())
    ]


@pytest.mark.parametrize("name", [*HOSTILE_NAMES, "--server=https://elsewhere", "Upper", "a" * 254])
def test_cli_refuses_a_node_name_kubernetes_never_gives(tmp_path, name):
    nodes = node_list()
    nodes["items"][0]["metadata"]["name"] = name
    result = _annotations_cli(tmp_path, nodes)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error {tmp_path / 'nodes.json'}: metadata.name: ")
    assert "is not a Kubernetes node name" in line and "kubectl get nodes -o json" in line


def test_annotate_commands_hand_kubectl_hostile_names_whole(tmp_path):
    # The verb refuses such names; the commands quote every word all the same.
    annotations = {name: f"default:ec2:{name}" for name in HOSTILE_NAMES}
    run = pipe_to_sh("\n".join(topology.annotate_commands(annotations)) + "\n", ["kubectl"], tmp_path)
    assert (run.returncode, run.strays) == (0, [])
    assert [call.argv for call in run.calls] == [
        ["annotate", "node", name, f"{topology.ANNOTATION}=default:ec2:{name}", "--overwrite"]
        for name in sorted(HOSTILE_NAMES)
    ]


def test_cli_bad_node_list_is_exit_2_naming_file_and_field(tmp_path):
    result = _annotations_cli(
        tmp_path, {"items": [{"metadata": {"name": "x", "labels": labels.compute_group_labels("gpu")}}]}
    )
    assert result.exit_code == 2, result.output
    assert "nodes.json" in result.stderr and "items[0].spec.providerID" in result.stderr
    assert "Traceback" not in result.output


def test_the_topology_writer_may_only_get_list_and_patch_nodes(rendered):
    """Its access entry's group (topology_writer_settings) is bound to a ClusterRole with that
    one rule, applied with the cluster's other objects."""
    docs = [doc for doc in rendered["p5"] if doc["kind"].startswith("ClusterRole")]
    role, binding = sorted(docs, key=lambda d: d["kind"])
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]}]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}
    ]

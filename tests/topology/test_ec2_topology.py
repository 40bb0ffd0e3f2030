"""EC2's topology answer to Slurm's tree (gpucluster.agents.ec2_topology), on answers in
the documented DescribeInstanceTopology format (tests/topology/shapes.py)."""

from __future__ import annotations

import copy

import pytest

from gpucluster.agents.ec2_topology import (
    FLAT_SWITCH,
    ROOT_SWITCH,
    TopologyError,
    build,
    leaf_of,
    parse_conf,
    parse_response,
    render_conf,
    topology_unit,
)
from tests.topology.shapes import P5, P5EN, TRN2, instance


def _names(doc, group="gpu"):
    return {entry["InstanceId"]: f"{group}-{entry['InstanceId']}" for entry in doc["Instances"]}


def test_p5_block_becomes_two_leaves_under_one_spine():
    conf = render_conf(build(parse_response(P5), _names(P5)))
    assert conf.splitlines() == [
        "SwitchName=ec2 Switches=flat,nn-1f2e3d4c5b6a7980a",
        "SwitchName=flat",
        "SwitchName=nn-1f2e3d4c5b6a7980a Switches=nn-2a3b4c5d6e7f8091a",
        "SwitchName=nn-2a3b4c5d6e7f8091a Switches=nn-3a0000000000000a1,nn-3a0000000000000b2",
        "SwitchName=nn-3a0000000000000a1 Nodes=gpu-i-0a1b2c3d4e5f00001,gpu-i-0a1b2c3d4e5f00002",
        "SwitchName=nn-3a0000000000000b2 Nodes=gpu-i-0a1b2c3d4e5f00003,gpu-i-0a1b2c3d4e5f00004",
    ]


def test_p5en_units_name_every_switch_from_the_root():
    topology = build(parse_response(P5EN), _names(P5EN))
    unit = topology_unit(topology.paths["gpu-i-0a1b2c3d4e5f00013"])
    assert unit == "default:ec2:nn-top:nn-spine-b:nn-leaf-b1"
    assert sorted(topology.children["nn-top"]) == ["nn-spine-a", "nn-spine-b"]


def test_trn2_on_two_top_nodes_still_shares_the_root():
    topology = build(parse_response(TRN2), _names(TRN2, "trn"))
    assert sorted(topology.children[ROOT_SWITCH]) == [FLAT_SWITCH, "nn-t1", "nn-t2"]
    assert leaf_of(topology)["trn-i-0a1b2c3d4e5f00023"] == "nn-t2-s1-l1"


def test_instances_without_a_name_are_left_out_and_flat_nodes_hang_from_flat():
    names = _names(P5)
    names.pop("i-0a1b2c3d4e5f00004")
    topology = build(parse_response(P5), names, flat=["cpu-i-0a1b2c3d4e5f00099"])
    assert "gpu-i-0a1b2c3d4e5f00004" not in topology.paths
    assert topology.paths["cpu-i-0a1b2c3d4e5f00099"] == (ROOT_SWITCH, FLAT_SWITCH)


def test_the_rendered_file_reads_back_to_the_same_leaves():
    topology = build(parse_response(P5EN), _names(P5EN), flat=["cpu-i-0a1b2c3d4e5f00099"])
    assert parse_conf(render_conf(topology, "a header\nof two lines")) == leaf_of(topology)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda doc: doc.pop("Instances"), "'Instances' list"),
        (lambda doc: doc["Instances"][0].pop("NetworkNodes"), "NetworkNodes: must be a non-empty list"),
        (lambda doc: doc["Instances"][0].pop("InstanceId"), "InstanceId: must be a non-empty string"),
        (lambda doc: doc["Instances"][0].update(InstanceId="i-nothex"), "is not an EC2 instance id"),
        (lambda doc: doc["Instances"][0].update(NetworkNodes=["nn-a", "nn-b", "nn-a"]), "a cycle"),
        (
            lambda doc: doc["Instances"][0].update(NetworkNodes=["nn-a", "x[1-2]", "nn-c"]),
            "cannot be a Slurm switch",
        ),
        # The same instance under another leaf further down the answer.
        (
            lambda doc: doc["Instances"].append(
                {**doc["Instances"][0], "NetworkNodes": ["nn-top", "nn-spine-b", "nn-leaf-b1"]}
            ),
            "is in two places",
        ),
        # nn-spine-a under nn-top for one instance, nn-top under nn-spine-a for another: a cycle.
        (
            lambda doc: doc["Instances"].append(
                instance(19, "p5en.48xlarge", ["nn-spine-a", "nn-top", "nn-x"])
            ),
            "has one parent",
        ),
        # A network node that holds instances and has nodes below it.
        (
            lambda doc: doc["Instances"].append(instance(18, "p5en.48xlarge", ["nn-top", "nn-spine-a"])),
            "holds instances and also has network nodes under it",
        ),
    ],
)
def test_answers_that_are_not_a_tree_name_the_problem(mutate, message):
    doc = copy.deepcopy(P5EN)
    mutate(doc)
    with pytest.raises(TopologyError, match=message.replace("[", r"\[")):
        parse_response(doc)


def test_two_instances_under_one_node_name_are_refused():
    names = _names(P5)
    names["i-0a1b2c3d4e5f00002"] = names["i-0a1b2c3d4e5f00003"]
    with pytest.raises(TopologyError, match="is in two places"):
        build(parse_response(P5), names)

"""Properties of the tree built from any well-formed answer: every named instance is under
exactly one leaf in the rendered topology.conf, and that leaf is its deepest network node."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gpucluster.agents.ec2_topology import ROOT_SWITCH, build, parse_conf, parse_response, render_conf


@st.composite
def answers(draw):
    """An answer over a random 3- or 4-layer network: each instance picks a path of nodes
    whose names encode their parents, so the whole answer is always a tree."""
    layers = draw(st.sampled_from([3, 4]))
    count = draw(st.integers(min_value=1, max_value=40))
    instances = []
    for number in range(count):
        path, name = [], "nn"
        for _ in range(layers):
            name = f"{name}-{draw(st.integers(min_value=0, max_value=2))}"
            path.append(name)
        instances.append(
            {
                "InstanceId": f"i-{number:017x}",
                "InstanceType": "p6-b200.48xlarge" if layers == 4 else "p5.48xlarge",
                "NetworkNodes": path,
            }
        )
    # Pages may repeat an instance; the same place twice is one instance.
    repeats = draw(st.lists(st.sampled_from(instances), max_size=3))
    return {"Instances": instances + [dict(entry) for entry in repeats]}


@settings(max_examples=60, deadline=None)
@given(answers(), st.data())
def test_every_instance_is_under_exactly_one_leaf_its_deepest_node(doc, data):
    placements = parse_response(doc)
    ids = sorted({entry["InstanceId"] for entry in doc["Instances"]})
    named = data.draw(st.lists(st.sampled_from(ids), unique=True))
    names = {iid: f"gpu-{iid}" for iid in named}
    conf = render_conf(build(placements, names))
    lines = [line for line in conf.splitlines() if "Nodes=" in line]
    listed = [node for line in lines for node in line.split("Nodes=")[1].split(",")]
    assert sorted(listed) == sorted(names.values()), "each named instance exactly once"
    leaves = parse_conf(conf)
    deepest = {placement.instance_id: placement.network_nodes[-1] for placement in placements}
    assert leaves == {names[iid]: deepest[iid] for iid in named}
    assert conf.splitlines()[0].startswith(f"SwitchName={ROOT_SWITCH} ")

"""`gpucluster topology render`: the file the head would write for a saved answer, and
bad input as exit 2 naming the file and the problem (one line, no traceback)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpucluster.cli import app
from tests.topology.shapes import P5, P5EN


def _render(tmp_path, doc, names=None, raw=None):
    describe = tmp_path / "describe.json"
    describe.write_text(raw if raw is not None else json.dumps(doc))
    args = ["topology", "render", str(describe)]
    if names is not None:
        (tmp_path / "names.json").write_text(names if isinstance(names, str) else json.dumps(names))
        args += ["--names", str(tmp_path / "names.json")]
    return CliRunner().invoke(app, args)


def test_prints_the_tree_and_each_nodes_switch(tmp_path):
    names = {entry["InstanceId"]: f"gpu-{entry['InstanceId']}" for entry in P5["Instances"]}
    names["i-0a1b2c3d4e5f00099"] = "gpu-i-0a1b2c3d4e5f00099"  # not described: flat default
    result = _render(tmp_path, P5, names)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "SwitchName=flat Nodes=gpu-i-0a1b2c3d4e5f00099" in lines
    assert "SwitchName=nn-3a0000000000000b2 Nodes=gpu-i-0a1b2c3d4e5f00003,gpu-i-0a1b2c3d4e5f00004" in lines
    assert (
        "# i-0a1b2c3d4e5f00003 -> gpu-i-0a1b2c3d4e5f00003: nn-3a0000000000000b2 "
        "(default:ec2:nn-1f2e3d4c5b6a7980a:nn-2a3b4c5d6e7f8091a:nn-3a0000000000000b2)"
    ) in lines


def test_without_names_nodes_are_named_by_instance_id(tmp_path):
    result = _render(tmp_path, P5EN)
    assert result.exit_code == 0, result.output
    assert "SwitchName=nn-leaf-a1 Nodes=i-0a1b2c3d4e5f00011" in result.stdout.splitlines()


@pytest.mark.parametrize(
    ("raw", "names", "message"),
    [
        ("{not json", None, "describe.json: line 1: not JSON"),
        (json.dumps({"Reservations": []}), None, "describe.json: Instances: missing"),
        (
            json.dumps({"Instances": [{"InstanceId": "i-0a1b2c3d4e5f00001", "InstanceType": "p5.48xlarge"}]}),
            None,
            "describe.json: Instances[0].NetworkNodes: must be a non-empty list",
        ),
        (
            json.dumps(
                {
                    "Instances": [
                        {
                            "InstanceId": "i-0a1b2c3d4e5f00001",
                            "InstanceType": "p5.48xlarge",
                            "NetworkNodes": ["a", "b"],
                        },
                        {
                            "InstanceId": "i-0a1b2c3d4e5f00002",
                            "InstanceType": "p5.48xlarge",
                            "NetworkNodes": ["b", "a"],
                        },
                    ]
                }
            ),
            None,
            "not a tree (a cycle or a node in two places)",
        ),
        (
            json.dumps(
                {
                    "Instances": [
                        {
                            "InstanceId": "i-0a1b2c3d4e5f00001",
                            "InstanceType": "p5.48xlarge",
                            "NetworkNodes": ["a", "b"],
                        },
                        {
                            "InstanceId": "i-0a1b2c3d4e5f00001",
                            "InstanceType": "p5.48xlarge",
                            "NetworkNodes": ["a", "c"],
                        },
                    ]
                }
            ),
            None,
            "instance i-0a1b2c3d4e5f00001 is in two places",
        ),
        (json.dumps(P5), "[1, 2]", "names.json: (top level): expected a JSON object"),
        (json.dumps(P5), {"i-0a1b2c3d4e5f00001": "gpu a"}, "is not a Slurm node name"),
        (json.dumps(P5), {"i-0a1b2c3d4e5f00001": "gpu-1\n"}, "is not a Slurm node name"),
        (json.dumps(P5), {"i-0a1b2c3d4e5f00001\n": "gpu-1"}, "is not an EC2 instance id"),
        (json.dumps(P5), {"gpu-1": "gpu-1"}, "names.json: gpu-1: is not an EC2 instance id"),
        (
            json.dumps(P5),
            {"i-0a1b2c3d4e5f00001": "gpu-x", "i-0a1b2c3d4e5f00003": "gpu-x"},
            "names.json: node gpu-x: is in two places",
        ),
    ],
)
def test_bad_input_exits_2_naming_the_problem(tmp_path, raw, names, message):
    result = _render(tmp_path, None, names, raw=raw)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    errors = result.stderr.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("error ") and message in errors[0], result.stderr
    assert "Traceback" not in result.stderr

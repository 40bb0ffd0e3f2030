"""`orchestrator: ec2 | eks`: one key picks the control plane, and keys that mean nothing under
the chosen one are refused by name."""

from __future__ import annotations

import copy

import yaml
from typer.testing import CliRunner

from gpucluster.bad_input import BadInput
from gpucluster.cli.root import app
from gpucluster.config.loader import parse_config
from tests.conftest import REPO

EKS = yaml.safe_load((REPO / "examples" / "p5-eks-slinky.yaml").read_text())


def problems_for(change) -> list[str]:
    data = copy.deepcopy(EKS)
    change(data)
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def test_the_default_is_ec2_and_the_eks_example_is_valid():
    default = parse_config((REPO / "examples" / "default.yaml").read_text(), "default.yaml")
    assert default.orchestrator == "ec2"
    assert problems_for(lambda d: None) == []


def test_an_ec2_only_key_on_eks_is_refused_by_name():
    [problem] = problems_for(lambda d: d.update(head_node={"instance_type": "m7i.4xlarge"}))
    assert problem.startswith("head_node:")
    assert "orchestrator is eks" in problem and "slurmctld runs as a pod" in problem
    assert "set orchestrator: ec2" in problem


def test_every_refused_key_is_named_in_one_problem():
    def change(d):
        d["image"] = {"ami_id": "ami-0123456789abcdef0"}
        d["login_nodes"]["instance_type"] = "m7i.2xlarge"
        d["compute_groups"][0]["placement_group"] = False

    [problem] = problems_for(change)
    for path in ("image", "login_nodes.instance_type", "compute_groups.0.placement_group"):
        assert path in problem


def test_keys_that_mean_the_same_on_eks_are_kept():
    # login_nodes.count is the LoginSet's size; an explicit null is no setting at all.
    assert problems_for(lambda d: d.update(login_nodes={"count": 2}, rest_api=None)) == []


def test_an_existing_vpc_is_refused_on_eks():
    [problem] = problems_for(
        lambda d: d["network"].update(vpc_id="vpc-0123456789abcdef0", subnet_id="subnet-0123456789abcdef0")
    )
    assert problem.startswith("network.vpc_id:") and "two zones" in problem


def test_the_same_keys_are_accepted_on_ec2():
    def change(d):
        d["orchestrator"] = "ec2"
        d["head_node"] = {"instance_type": "m7i.4xlarge"}
        d["compute_groups"][0]["placement_group"] = False

    assert problems_for(change) == []


def test_an_unknown_orchestrator_is_refused():
    [problem] = problems_for(lambda d: d.update(orchestrator="ecs"))
    assert problem.startswith("orchestrator:")


def test_validate_exits_2_naming_file_and_field(tmp_path):
    data = copy.deepcopy(EKS)
    data["head_node"] = {"instance_type": "m7i.4xlarge"}
    path = tmp_path / "eks.yaml"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert f"{path}" in result.stderr and "head_node" in result.stderr
    assert "Traceback" not in result.output + result.stderr


def test_the_image_warnings_are_ec2_only():
    cfg = parse_config(yaml.safe_dump(EKS), "c.yaml")
    assert cfg.warnings() == []

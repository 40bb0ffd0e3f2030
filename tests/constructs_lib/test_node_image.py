"""node_image_id: a pinned AMI is used as written; otherwise a template parameter resolves
the configured SSM parameter at deploy, so the AMI changes only with a deploy."""

from __future__ import annotations

import pytest

from gpucluster.constructs_lib.node_image import node_image_id
from tests.constructs_lib.small_stack import build


@pytest.fixture(scope="module")
def from_ssm(example_configs):
    cfg = example_configs["default"]  # ami_id: null
    return build(
        lambda stack: stack.resolve(node_image_id(stack, cfg.image.ami_id, cfg.image.ssm_parameter)), cfg
    )


def test_a_pinned_ami_adds_nothing_to_the_template(example_configs):
    cfg = example_configs["p4d-on-demand"]
    built = build(lambda stack: node_image_id(stack, cfg.image.ami_id, cfg.image.ssm_parameter), cfg)
    assert built.construct == "ami-0fedcba9876543210"
    assert set(built.template.to_json().get("Parameters", {})) == {"BootstrapVersion"}


def test_without_a_pin_the_ami_is_the_ssm_parameter_resolved_at_deploy(from_ssm, example_configs):
    parameter = from_ssm.template.to_json()["Parameters"]["NodeImageId"]
    assert parameter["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    assert parameter["Default"] == example_configs["default"].image.ssm_parameter
    assert from_ssm.construct == {"Ref": "NodeImageId"}

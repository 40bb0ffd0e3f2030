"""gpucluster.constructs_lib.cfn_tags: the tags a resource built from CloudFormation JSON carries are
the ones CDK's TagManager gives the L1 it replaces, in the same order and shape."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from gpucluster.constructs_lib.cfn import resource
from gpucluster.constructs_lib.cfn_tags import tagging_every_resource
from tests.constructs_lib.small_stack import build

# Case, digits and the punctuation AWS allows in keys: JavaScript's localeCompare orders
# them unlike Python's sorted().
CLUSTER = {"gpucluster:cluster": "demo", "Team": "ml", "team-b": "x", "a_b": "1", "Name": "from-config"}
OWN = {"gpucluster:role": "compute", "ab": "2", "a-b": "3", "Z9": "4", "9z": "5", "x.y": "6", "@k": "7"}
SCOPED = {"Name": "stack/Vpc", "x/y": "8", "k+1": "9"}


def _l1(scope: Construct, kind: str) -> cdk.CfnResource:
    own = sorted(OWN.items())
    if kind == "AWS::EC2::SecurityGroup":
        return ec2.CfnSecurityGroup(
            scope, "R", group_description="d", tags=[cdk.CfnTag(key=k, value=v) for k, v in own]
        )
    if kind == "AWS::SSM::Parameter":
        return ssm.CfnParameter(scope, "R", type="String", value="v", tags=dict(own))
    return autoscaling.CfnAutoScalingGroup(
        scope,
        "R",
        max_size="1",
        min_size="1",
        tags=[
            autoscaling.CfnAutoScalingGroup.TagPropertyProperty(key=k, value=v, propagate_at_launch=False)
            for k, v in own
        ],
    )


PROPERTIES = {
    "AWS::EC2::SecurityGroup": {"GroupDescription": "d"},
    "AWS::SSM::Parameter": {"Type": "String", "Value": "v"},
    "AWS::AutoScaling::AutoScalingGroup": {"MaxSize": "1", "MinSize": "1"},
}


@pytest.mark.parametrize("kind", sorted(PROPERTIES))
def test_tags_are_those_cdk_gives_the_l1(kind):
    def with_l1(stack: cdk.Stack) -> None:
        scope = Construct(stack, "Scoped")
        _l1(scope, kind)
        for key, value in CLUSTER.items():
            cdk.Tags.of(stack).add(key, value)
        for key, value in SCOPED.items():
            cdk.Tags.of(scope).add(key, value)

    def with_cfn(stack: cdk.Stack) -> None:
        with tagging_every_resource(CLUSTER):
            resource(Construct(stack, "Scoped"), "R", kind, PROPERTIES[kind], OWN, SCOPED)

    # Compared as text: the order of a map's keys counts too.
    expected = json.dumps(build(with_l1).template.to_json()["Resources"])
    assert json.dumps(build(with_cfn).template.to_json()["Resources"]) == expected


def test_an_untaggable_type_refuses_tags():
    with pytest.raises(ValueError, match="takes no tags"):
        build(lambda stack: resource(stack, "R", "AWS::EC2::Route", {}, {"a": "b"}))


def test_every_type_the_examples_build_is_taggable_exactly_when_its_l1_is(synthesized):
    """A type missing from TAG_STYLES would silently lose the cluster's tags."""
    import importlib

    from gpucluster.constructs_lib.cfn_tags import TAG_STYLES

    types = {
        resource["Type"]
        for result in synthesized.values()
        for template in result.templates.values()
        for resource in template["Resources"].values()
    }
    for kind in sorted(types):
        _, service, name = kind.split("::")
        l1 = getattr(importlib.import_module(f"aws_cdk.aws_{service.lower()}"), f"Cfn{name}")
        assert kind == l1.CFN_RESOURCE_TYPE_NAME
        taggable = any(isinstance(getattr(l1, name, None), property) for name in ("tags", "cdk_tag_manager"))
        assert taggable == (kind in TAG_STYLES), kind

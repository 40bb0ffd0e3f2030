"""HeadNode and LoginNodes, built from launch_settings' shared template: the head is one
private instance that sets its own security groups; login nodes are a fixed-size Auto
Scaling group whose template carries them. Both: IMDSv2 only, an encrypted gp3 root, and
tags naming the cluster and the role on the instance and its volume."""

from __future__ import annotations

from typing import Any

import pytest

from gpucluster.constructs_lib.head_node import HeadNode
from gpucluster.constructs_lib.launch_settings import ServiceNodeProps
from gpucluster.constructs_lib.login_nodes import LoginNodes, LoginNodesProps
from tests.constructs_lib.small_stack import IMAGE_ID, NODES_SG, PROFILE_ARN, SUBNET_ID, Built, build


def _props(cfg, node) -> ServiceNodeProps:
    return ServiceNodeProps(
        instance_type=node.instance_type,
        root_volume_gib=node.root_volume_gib,
        cluster_tags={"gpucluster:cluster": cfg.name},
        image_id=IMAGE_ID,
        subnet_id=SUBNET_ID,
        instance_profile_arn=PROFILE_ARN,
        security_group_ids=[NODES_SG],
        user_data="#!/bin/bash\ntrue\n",
    )


@pytest.fixture(scope="module")
def head(example_configs) -> Built[HeadNode]:
    cfg = example_configs["p5en-capacity-block"]
    return build(lambda stack: HeadNode(stack, "Head", _props(cfg, cfg.head_node)), cfg)


@pytest.fixture(scope="module")
def login(example_configs) -> Built[LoginNodes]:
    cfg = example_configs["p5en-capacity-block"]  # two login nodes
    props = LoginNodesProps(node=_props(cfg, cfg.login_nodes), count=cfg.login_nodes.count)
    return build(lambda stack: LoginNodes(stack, "Login", props), cfg)


def _template_data(built: Built[Any]) -> dict[str, Any]:
    data: dict[str, Any] = built.only("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    return data


def test_the_head_is_one_instance_in_the_node_subnet_with_its_own_groups(head):
    instance = head.only("AWS::EC2::Instance")
    assert (instance["SubnetId"], instance["SecurityGroupIds"]) == (SUBNET_ID, [NODES_SG])
    assert instance["Monitoring"] is True
    (template,) = head.resources("AWS::EC2::LaunchTemplate")
    assert instance["LaunchTemplate"]["LaunchTemplateId"] == {"Ref": template}
    # An instance naming groups itself must not get them from its template too.
    assert "SecurityGroupIds" not in _template_data(head)
    assert _template_data(head)["InstanceType"] == "m7i.4xlarge"


def test_login_nodes_are_a_fixed_size_group_whose_template_carries_the_groups(login):
    group = login.only("AWS::AutoScaling::AutoScalingGroup")
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == ("2", "2", "2")
    assert group["VPCZoneIdentifier"] == [SUBNET_ID]
    login.template.resource_count_is("AWS::EC2::Instance", 0)
    data = _template_data(login)
    assert data["SecurityGroupIds"] == [NODES_SG]
    assert data["InstanceType"] == "m7i.2xlarge"


@pytest.mark.parametrize(("built", "role"), [("head", "head"), ("login", "login")])
def test_imdsv2_only_an_encrypted_root_and_role_tags(request, built, role):
    data = _template_data(request.getfixturevalue(built))
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpPutResponseHopLimit": 1,
        "HttpTokens": "required",
        "InstanceMetadataTags": "enabled",
    }
    (root,) = data["BlockDeviceMappings"]
    assert root["Ebs"]["Encrypted"] is True and root["Ebs"]["VolumeType"] == "gp3"
    assert data["IamInstanceProfile"] == {"Arn": PROFILE_ARN}
    for spec in data["TagSpecifications"]:
        tags = {tag["Key"]: tag["Value"] for tag in spec["Tags"]}
        assert (tags["gpucluster:cluster"], tags["gpucluster:role"]) == ("p5en", role)
    assert {spec["ResourceType"] for spec in data["TagSpecifications"]} == {"instance", "volume"}

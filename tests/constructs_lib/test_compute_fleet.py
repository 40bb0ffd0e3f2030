"""ComputeFleet: one compute group's Auto Scaling group, sized by its capacity type, with
the launch hook that abandons a node which never finishes its bootstrap, the placement
group it creates or joins, and the SSM document the head node's agents read."""

from __future__ import annotations

import json

import pytest

from gpucluster import names
from gpucluster.constructs_lib.compute_fleet import ComputeFleet, ComputeFleetProps
from gpucluster.resolved import resolve
from tests.constructs_lib.small_stack import (
    EFA_SG,
    IMAGE_ID,
    NODES_SG,
    PROFILE_ARN,
    SUBNET_ID,
    Built,
    build,
    ref,
)

HOOK_TIMEOUT = 2700


def _props(cfg, name, **placement) -> ComputeFleetProps:
    resolved = resolve(cfg)
    group = resolved.group(name)
    return ComputeFleetProps(
        cluster=cfg.name,
        cluster_tags=resolved.tags,
        group=name,
        instance_type=group.instance.name,
        count=group.count,
        capacity_type=group.capacity_type,
        reservation_id=group.reservation_id,
        interfaces=group.interfaces,
        root_volume_gib=group.root_volume_gib,
        facts_parameter=group.parameter,
        launch_hook_timeout_seconds=HOOK_TIMEOUT,
        image_id=IMAGE_ID,
        subnet_id=SUBNET_ID,
        instance_profile_arn=PROFILE_ARN,
        security_group_ids=[NODES_SG, EFA_SG],
        user_data="#!/bin/bash\ntrue\n",
        **placement,
    )


@pytest.fixture(scope="module")
def block(example_configs) -> Built[ComputeFleet]:
    cfg = example_configs["default"]
    return build(
        lambda stack: ComputeFleet(stack, "Fleet", _props(cfg, "gpu", creates_placement_group=True)), cfg
    )


@pytest.fixture(scope="module")
def odcr(example_configs) -> Built[ComputeFleet]:
    cfg = example_configs["mixed"]
    return build(
        lambda stack: ComputeFleet(stack, "Fleet", _props(cfg, "eval", existing_placement_group="eval-odcr")),
        cfg,
    )


def test_a_capacity_block_group_starts_at_zero_and_leaves_the_size_to_the_controller(block):
    group = block.only("AWS::AutoScaling::AutoScalingGroup")
    assert (group["MinSize"], group["MaxSize"]) == ("0", "2")
    assert "DesiredCapacity" not in group
    assert group["VPCZoneIdentifier"] == [SUBNET_ID]
    assert group["LaunchTemplate"]["LaunchTemplateId"] == ref(block, block.construct.launch_template.template)


def test_an_odcr_group_runs_its_count_all_the_time(odcr):
    group = odcr.only("AWS::AutoScaling::AutoScalingGroup")
    assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == ("1", "1", "1")


def test_a_node_that_does_not_finish_its_bootstrap_is_abandoned(block):
    (hook,) = block.only("AWS::AutoScaling::AutoScalingGroup")["LifecycleHookSpecificationList"]
    assert hook["LifecycleHookName"] == names.LAUNCH_LIFECYCLE_HOOK
    assert hook["LifecycleTransition"] == "autoscaling:EC2_INSTANCE_LAUNCHING"
    assert hook["DefaultResult"] == "ABANDON"
    assert hook["HeartbeatTimeout"] == HOOK_TIMEOUT


def test_a_created_placement_group_is_a_cluster_group_the_template_launches_into(block):
    assert block.only("AWS::EC2::PlacementGroup")["Strategy"] == "cluster"
    placement = block.only("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["Placement"]
    assert placement == {"GroupName": ref(block, block.construct.placement_group)}


def test_an_odcr_group_joins_its_reservations_placement_group_and_creates_none(odcr):
    odcr.template.resource_count_is("AWS::EC2::PlacementGroup", 0)
    placement = odcr.only("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]["Placement"]
    assert placement == {"GroupName": "eval-odcr"}


def test_the_group_document_names_its_auto_scaling_group(block, example_configs):
    cfg = example_configs["default"]
    parameter = block.only("AWS::SSM::Parameter")
    assert parameter["Name"] == names.compute_group_parameter(cfg, "gpu")
    before, asg, after = parameter["Value"]["Fn::Join"][1]
    assert asg == ref(block, block.construct.group)
    document = json.loads(before + "X" + after)
    assert document == {
        "group": "gpu",
        "count": 2,
        "capacity_type": "capacity-block",
        "reservation_id": "cr-0a1b2c3d4e5f67890",
        "instance_type": "p5.48xlarge",
        "asg_name": "X",
    }


def test_creating_and_joining_a_placement_group_exclude_each_other(example_configs):
    cfg = example_configs["default"]
    with pytest.raises(ValueError, match="either creates a placement group or joins one"):
        _props(cfg, "gpu", creates_placement_group=True, existing_placement_group="pg")

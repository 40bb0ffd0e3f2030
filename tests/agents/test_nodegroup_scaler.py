"""The EKS Capacity Block scaler (gpucluster/agents/nodegroup_scaler.py): the EC2 path's decision
applied to managed node groups, with EC2 and EKS faked by botocore's Stubber (any call not
queued fails), and the function's package run on its own from a copy."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents import block_decision
from gpucluster.agents import nodegroup_scaler as scaler
from gpucluster.agents import nodegroup_settings as settings
from tests.agent_scripts import run_in_package
from tests.agents.fakes import BLOCK_ID, END, GRACE, START

CLUSTER = "p5eks"
OTHER_BLOCK = "cr-0fedcba9876543210"
H100 = settings.BlockNodeGroup("h100", "p5eks-h100", 2, BLOCK_ID)
H200 = settings.BlockNodeGroup("h200", "p5eks-h200", 4, OTHER_BLOCK)


def clients() -> tuple[Stubber, Stubber]:
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    eks = boto3.client("eks", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    return Stubber(ec2), Stubber(eks)


def block(ec2: Stubber, reservation_id: str, state: str = "active", end: datetime = END) -> None:
    ec2.add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [{"State": state, "StartDate": START, "EndDate": end}]},
        {"CapacityReservationIds": [reservation_id]},
    )


def nodegroup(eks: Stubber, name: str, desired: int, low: int = 0, high: int = 2) -> None:
    eks.add_response(
        "describe_nodegroup",
        {"nodegroup": {"scalingConfig": {"desiredSize": desired, "minSize": low, "maxSize": high}}},
        {"clusterName": CLUSTER, "nodegroupName": name},
    )


def update(eks: Stubber, name: str, config: dict[str, int]) -> None:
    eks.add_response(
        "update_nodegroup_config",
        {"update": {"id": "u-1", "status": "InProgress"}},
        {"clusterName": CLUSTER, "nodegroupName": name, "scalingConfig": config},
    )


def run(ec2: Stubber, eks: Stubber, groups: list[settings.BlockNodeGroup], now: datetime) -> int:
    with ec2, eks:
        failed = scaler.run_once(ec2.client, eks.client, CLUSTER, groups, now)
        ec2.assert_no_pending_responses()
        eks.assert_no_pending_responses()
    return failed


def test_an_active_block_scales_its_node_group_up_to_count():
    ec2, eks = clients()
    block(ec2, BLOCK_ID)
    nodegroup(eks, "p5eks-h100", desired=0)
    update(eks, "p5eks-h100", {"desiredSize": 2})
    assert run(ec2, eks, [H100], START + timedelta(hours=1)) == 0


def test_a_scheduled_block_leaves_the_group_at_zero_without_a_write():
    ec2, eks = clients()
    block(ec2, BLOCK_ID, state="scheduled")
    nodegroup(eks, "p5eks-h100", desired=0)
    assert run(ec2, eks, [H100], START - timedelta(hours=1)) == 0


@pytest.mark.parametrize("before_end", [timedelta(minutes=40), timedelta(minutes=37)])
def test_from_40_minutes_before_the_end_the_group_stays_at_zero(before_end):
    # EKS's own scheduled action has set the group to 0 at end - 40 min; a 35-minute lead
    # (the EC2 path's) would scale it back up here and launch nodes that die minutes later.
    ec2, eks = clients()
    block(ec2, BLOCK_ID)
    nodegroup(eks, "p5eks-h100", desired=0)
    assert run(ec2, eks, [H100], END - before_end) == 0


def test_scale_in_at_the_lead_and_an_extended_block_scales_back_up():
    ec2, eks = clients()
    block(ec2, BLOCK_ID)
    nodegroup(eks, "p5eks-h100", desired=2)
    update(eks, "p5eks-h100", {"desiredSize": 0})
    block(ec2, BLOCK_ID, end=END + timedelta(days=7))
    nodegroup(eks, "p5eks-h100", desired=0)
    update(eks, "p5eks-h100", {"desiredSize": 2})
    assert run(ec2, eks, [H100, H100], END - timedelta(minutes=39)) == 0


def test_bounds_changed_by_hand_are_widened_in_the_same_call_and_min_never_raised():
    ec2, eks = clients()
    block(ec2, BLOCK_ID, state="expired")
    nodegroup(eks, "p5eks-h100", desired=2, low=2, high=2)
    update(eks, "p5eks-h100", {"desiredSize": 0, "minSize": 0})
    block(ec2, OTHER_BLOCK)
    nodegroup(eks, "p5eks-h200", desired=0, low=0, high=2)
    update(eks, "p5eks-h200", {"desiredSize": 4, "maxSize": 4})
    assert run(ec2, eks, [H100, H200], START + timedelta(hours=1)) == 0


def test_one_group_failing_stops_no_other_group(caplog):
    ec2, eks = clients()
    ec2.add_client_error("describe_capacity_reservations", "UnauthorizedOperation", "denied")
    block(ec2, OTHER_BLOCK)
    nodegroup(eks, "p5eks-h200", desired=0, high=4)
    eks.add_client_error("update_nodegroup_config", "ResourceInUseException", "update in progress")
    with caplog.at_level("INFO", logger="nodegroup-scaler"):
        assert run(ec2, eks, [H100, H200], START + timedelta(hours=1)) == 2
    lines = [record.getMessage() for record in caplog.records]
    assert "cannot read the block, nothing changed" in lines[0]
    assert "desired 4 NOT SET" in lines[1] and "update in progress" in lines[1]


def test_the_decision_is_the_ec2_paths_with_the_eks_lead():
    now = END - timedelta(minutes=38)
    ec2_path = block_decision.decide(now, "active", START, END, 2, GRACE)
    eks_path = block_decision.decide(now, "active", START, END, 2, GRACE, block_decision.EKS_SCALE_IN_LEAD)
    assert (ec2_path.desired_capacity, eks_path.desired_capacity) == (2, 0)
    assert "40 min lead" in eks_path.reason


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        '{"group": "h100"}',
        '[{"group": "h100", "nodegroup": "n", "count": 2}]',
        '[{"group": "h100", "nodegroup": "n", "count": 0, "reservation_id": "cr-01234567890abcdef"}]',
        '[{"group": "h100", "nodegroup": "n", "count": 2, "reservation_id": "odcr"}]',
    ],
)
def test_bad_group_settings_are_refused_by_name(text):
    with pytest.raises(settings.GroupsSettingError, match=settings.GROUPS_SETTING):
        settings.parse_groups(text)


def test_the_setting_the_stack_writes_is_the_one_the_function_reads():
    assert settings.parse_groups(settings.groups_setting([H100, H200])) == [H100, H200]


def test_the_package_is_what_the_handler_imports():
    # agent_tree fails on a module that imports anything but the standard library and the SDK.
    package = agent_tree((handler_module(settings.HANDLER),))
    assert settings.HANDLER == "gpucluster.agents.nodegroup_scaler.handler"
    assert "gpucluster/agents/nodegroup_scaler.py" in package


HANDLER_RUN = """
import boto3, logging
from gpucluster.agents import nodegroup_scaler, runtime
logging.basicConfig()  # Lambda's runtime gives the root logger its handler
from datetime import datetime, UTC
from botocore.stub import Stubber
made = {}
def client(service, region):
    made[service] = boto3.client(
        service, region_name=region, aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(made[service])
    if service == "ec2":
        stub.add_response("describe_capacity_reservations", {"CapacityReservations": [
            {"State": "scheduled", "StartDate": datetime(2099, 1, 1, tzinfo=UTC),
             "EndDate": datetime(2099, 1, 2, tzinfo=UTC)}]})
    else:
        stub.add_response("describe_nodegroup", {"nodegroup": {"scalingConfig":
            {"desiredSize": 0, "minSize": 0, "maxSize": 2}}})
    stub.activate()
    return made[service]
runtime.client = client
print(nodegroup_scaler.handler({}, None))
"""


def test_the_handler_runs_from_its_package_alone(tmp_path):
    groups = [{"group": "h100", "nodegroup": "p5eks-h100", "count": 2, "reservation_id": BLOCK_ID}]
    settings_env = {
        "GPUCLUSTER_CLUSTER": CLUSTER,
        settings.GROUPS_SETTING: json.dumps(groups),
        "AWS_REGION": "us-east-2",
    }
    done = run_in_package(tmp_path, settings.HANDLER, HANDLER_RUN, settings_env)
    assert done.returncode == 0, done.stderr
    assert "{'groups': 1}" in done.stdout
    assert "desired 0 (unchanged); block is scheduled, not active" in done.stderr

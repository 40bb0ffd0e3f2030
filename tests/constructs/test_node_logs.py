"""NodeLogs: a retained log group with a generated name and a pinned logical id, and the
CloudWatch agent configuration every node fetches from SSM, which names that group."""

from __future__ import annotations

import json

import pytest

from gpucluster import names
from gpucluster.bootstrap.node_logs import shipped_files
from gpucluster.infra.constructs.node_logs import NodeLogs, NodeLogsProps
from gpucluster.slurm.conf import SlurmSite
from tests.constructs.small_stack import Built, build


@pytest.fixture(scope="module")
def node_logs(example_configs) -> Built[NodeLogs]:
    cfg = example_configs["default"]
    return build(lambda stack: NodeLogs(stack, "NodeLogs", NodeLogsProps(cfg=cfg)), cfg)


def test_the_group_is_retained_kept_90_days_and_named_by_cloudformation(node_logs):
    group = node_logs.resources("AWS::Logs::LogGroup")["NodeLogGroup"]
    assert group["DeletionPolicy"] == group["UpdateReplacePolicy"] == "Retain"
    assert group["Properties"]["RetentionInDays"] == 90
    # A fixed name would make the next deploy fail on the retained group.
    assert "LogGroupName" not in group["Properties"]


def test_the_agent_configuration_ships_every_file_into_that_group(node_logs, example_configs):
    parameter = node_logs.only("AWS::SSM::Parameter")
    assert parameter["Name"] == names.log_agent_config_parameter(example_configs["default"])
    # Read the joined JSON with the group's Ref written as GROUP.
    pieces = parameter["Value"]["Fn::Join"][1]
    config = json.loads("".join("GROUP" if piece == {"Ref": "NodeLogGroup"} else piece for piece in pieces))
    collect = config["logs"]["logs_collected"]["files"]["collect_list"]
    assert {entry["file_path"] for entry in collect} == set(shipped_files(SlurmSite()))
    assert {entry["log_group_name"] for entry in collect} == {"GROUP"}

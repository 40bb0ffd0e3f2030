"""NodeLogs: a retained log group with a generated name and a pinned logical id, and the
CloudWatch agent configuration every node fetches from SSM, which names that group."""

from __future__ import annotations

import json

import pytest

from gpucluster.constructs_lib.node_logs import NodeLogs, NodeLogsProps
from gpucluster.node_files import LOG_GROUP_SLOT
from tests.constructs_lib.small_stack import Built, build

PARAMETER = "/gpucluster/demo/logs/agent-config"
FILES = {"/var/log/one.log": "one", "/var/log/two.log": "two"}
# An agent configuration as the node files carry it: the group named by its slot.
AGENT_CONFIG = {
    "logs": {
        "logs_collected": {
            "files": {
                "collect_list": [
                    {"file_path": path, "log_group_name": LOG_GROUP_SLOT, "log_stream_name": stream}
                    for path, stream in FILES.items()
                ]
            }
        }
    }
}


@pytest.fixture(scope="module")
def node_logs(example_configs) -> Built[NodeLogs]:
    cfg = example_configs["default"]
    props = NodeLogsProps(
        cluster="demo", agent_config=AGENT_CONFIG, agent_config_parameter=PARAMETER, retention_days=90
    )
    return build(lambda stack: NodeLogs(stack, "NodeLogs", props), cfg)


def test_the_group_is_retained_kept_90_days_and_named_by_cloudformation(node_logs):
    group = node_logs.resources("AWS::Logs::LogGroup")["NodeLogGroup"]
    assert group["DeletionPolicy"] == group["UpdateReplacePolicy"] == "Retain"
    assert group["Properties"]["RetentionInDays"] == 90
    # A fixed name would make the next deploy fail on the retained group.
    assert "LogGroupName" not in group["Properties"]


def test_the_agent_configuration_ships_every_file_into_that_group(node_logs):
    parameter = node_logs.only("AWS::SSM::Parameter")
    assert parameter["Name"] == PARAMETER
    # Read the joined JSON with the group's Ref written as GROUP.
    pieces = parameter["Value"]["Fn::Join"][1]
    config = json.loads("".join("GROUP" if piece == {"Ref": "NodeLogGroup"} else piece for piece in pieces))
    collect = config["logs"]["logs_collected"]["files"]["collect_list"]
    assert {entry["file_path"] for entry in collect} == set(FILES)
    assert {entry["log_group_name"] for entry in collect} == {"GROUP"}

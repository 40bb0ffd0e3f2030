"""`gpucluster nodes` against stubbed EC2 and SSM: the head found by its tags, node_repair's
report fetched through Run Command, the table and notes, the exit code, and each failure as
one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.stub import ANY
from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from gpucluster.nodes import head_report
from tests.aws.stubs import StubbedAws
from tests.conftest import REPO
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh

CONFIG = str(REPO / "examples" / "default.yaml")
REGION = "us-east-2"
HEAD = "i-0aaaaaaaaaaaaaaaa"
COMMAND = "0b1c2d3e-0000-4000-8000-000000000000"
SICK = "i-0123456789abcdef0"
WELL = "i-0123456789abcdef1"


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[StubbedAws]:
    stubbed = StubbedAws()
    monkeypatch.setattr(clients, "make_client", stubbed.client)
    monkeypatch.setattr(head_report, "POLL_SECONDS", 0)
    yield stubbed
    stubbed.check_all_used()


def head_is(aws: StubbedAws, *ids: str) -> None:
    instances = [{"InstanceId": i} for i in ids]
    aws.ec2(REGION).add_response(
        "describe_instances",
        {"Reservations": [{"Instances": instances}] if ids else []},
        {
            "Filters": [
                {"Name": "tag:gpucluster:cluster", "Values": ["demo"]},
                {"Name": "tag:gpucluster:role", "Values": ["head"]},
                {"Name": "instance-state-name", "Values": ["running"]},
            ]
        },
    )


def report_is(aws: StubbedAws, output: str, status: str = "Success", stderr: str = "") -> None:
    ssm = aws.stub("ssm", REGION)
    ssm.add_response(
        "send_command",
        {"Command": {"CommandId": COMMAND}},
        {
            "InstanceIds": [HEAD],
            "DocumentName": "AWS-RunShellScript",
            "Parameters": {"commands": [head_report.REPORT_COMMAND]},
            "TimeoutSeconds": 60,
            "Comment": ANY,
        },
    )
    asked = {"CommandId": COMMAND, "InstanceId": HEAD}
    # Asked at once, SSM may not know the invocation yet; then it runs; then it is done.
    ssm.add_client_error("get_command_invocation", "InvocationDoesNotExist", expected_params=asked)
    ssm.add_response("get_command_invocation", {"Status": "InProgress"}, asked)
    ssm.add_response(
        "get_command_invocation",
        {"Status": status, "StandardOutputContent": output, "StandardErrorContent": stderr},
        asked,
    )


def report(
    *nodes: tuple[str, str, str], replacements: list[dict[str, Any]] | None = None, tripped=None
) -> str:
    return json.dumps(
        {
            "nodes": [
                {"name": f"gpu-{iid}", "group": "gpu", "instance_id": iid, "state": state, "reason": reason}
                for iid, state, reason in nodes
            ],
            "replacements": replacements or [],
            "tripped": tripped,
            "cleared_at": None,
        }
    )


def run(*args: str):
    return CliRunner().invoke(app, ["nodes", *args])


def errors(output: str) -> list[str]:
    """The error lines (the example's own warnings about its unpinned AMI come first)."""
    return [line for line in output.splitlines() if not line.startswith("warning ")]


def test_every_node_in_service_exits_0(aws):
    head_is(aws, HEAD)
    report_is(aws, report((SICK, "IDLE", ""), (WELL, "ALLOCATED", "")))
    result = run(CONFIG)
    assert result.exit_code == 0, result.output
    assert "demo: 2 compute nodes, 0 drained or down" in result.output
    assert f"gpu-{SICK}" in result.output and f"gpu-{WELL}" in result.output


def test_a_drained_node_exits_1_with_its_reason_replacement_and_the_alert(aws):
    at = datetime(2026, 12, 4, 21, 0, tzinfo=UTC).isoformat()
    head_is(aws, HEAD)
    report_is(
        aws,
        report(
            (SICK, "DRAIN+IDLE+NOT_RESPONDING", f"healthcheck: GPU count 7, want 8; replaced {SICK} at T"),
            (WELL, "IDLE", ""),
            replacements=[
                {
                    "node": f"gpu-{SICK}",
                    "group": "gpu",
                    "instance_id": SICK,
                    "at": at,
                    "reason": "healthcheck: GPU count 7, want 8",
                }
            ],
            tripped={"at": at, "why": "3 nodes failed and the bound allows 2 replacements per hour"},
        ),
    )
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    assert "demo: 2 compute nodes, 1 drained or down" in result.output
    assert "healthcheck: GPU count 7, want 8" in result.output
    assert f"group gpu: last replacement gpu-{SICK} at {at}" in result.output
    assert "ALERT replacement stopped since" in result.output and "--clear-alert" in result.output


def test_no_running_head_is_one_line(aws):
    head_is(aws)
    result = run(CONFIG)
    assert result.exit_code == 1
    assert errors(result.output) == [
        "error cluster demo (us-east-2): found 0 running head nodes tagged gpucluster:cluster=demo (none); "
        "deploy the cluster (`cdk deploy`), or start its head node, and re-run"
    ]


def test_an_expired_login_is_the_aws_error_line(aws):
    aws.ec2(REGION).add_client_error("describe_instances", "ExpiredToken", "The security token expired")
    result = run(CONFIG)
    assert result.exit_code == 1
    (line,) = errors(result.output)
    assert line.startswith(
        "error aws ec2:DescribeInstances (us-east-2): ExpiredToken: The security token expired;"
    )


@pytest.mark.parametrize(
    ("output", "status", "stderr", "said"),
    [
        (
            '{"error": "cannot read /var/lib/gpucluster-node-repair/state.json: Permission denied"}',
            "Failed",
            "",
            "the node report failed: cannot read",
        ),
        (
            "",
            "Failed",
            "/usr/bin/python3: No module named gpucluster.agents.node_repair",
            "ended Failed: /usr/bin/python3: No module named",
        ),
    ],
)
def test_a_report_that_fails_on_the_head_is_one_line(aws, output, status, stderr, said):
    head_is(aws, HEAD)
    report_is(aws, output, status, stderr)
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    assert result.exit_code == 1
    (line,) = errors(result.output)
    assert line.startswith(f"error head node {HEAD} (us-east-2): ") and said in line, line


def test_a_head_that_never_answers_is_one_line(aws, monkeypatch):
    monkeypatch.setattr(head_report, "ATTEMPTS", 2)
    head_is(aws, HEAD)
    ssm = aws.stub("ssm", REGION)
    ssm.add_response("send_command", {"Command": {"CommandId": COMMAND}})
    for _ in range(2):
        ssm.add_response("get_command_invocation", {"Status": "Pending"})
    result = run(CONFIG)
    assert result.exit_code == 1
    (line,) = errors(result.output)
    assert f"did not answer SSM command {COMMAND} within 90 s" in line
    assert "aws ssm describe-instance-information" in line


@pytest.mark.parametrize("name", [name for name in HOSTILE_NAMES if name.isprintable()])
def test_the_invocation_lookup_piped_to_sh_asks_for_that_invocation(aws, tmp_path, name):
    # The command id is SSM's answer; SSM's are 36 characters.
    command_id = name.rjust(36, "0")
    head_is(aws, HEAD)
    ssm = aws.stub("ssm", REGION)
    ssm.add_response("send_command", {"Command": {"CommandId": command_id}})
    ssm.add_response(
        "get_command_invocation",
        {"Status": "Failed", "StandardOutputContent": "", "StandardErrorContent": "boom"},
        {"CommandId": command_id, "InstanceId": HEAD},
    )
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    (line,) = errors(result.output)
    lookup = line.split("see `", 1)[1].rsplit("`; is the cluster's bundle current?", 1)[0]
    shell = pipe_to_sh(lookup, ["aws"], tmp_path)
    assert (shell.returncode, shell.strays) == (0, [])
    assert [call.argv for call in shell.calls] == [
        [
            "ssm",
            "get-command-invocation",
            "--command-id",
            command_id,
            "--instance-id",
            HEAD,
            "--region",
            REGION,
        ]
    ]


@pytest.mark.parametrize(
    ("shape", "said"),
    [
        (
            {"nodes": [{"name": "gpu-1", "group": "gpu"}], "replacements": []},
            "nodes.0.instance_id: Field required",
        ),
        ({"nodes": "gpu-1", "replacements": []}, "nodes: Input should be a valid list"),
        ({"nodes": [], "tripped": {"at": "2026-12-01T00:00:00+00:00"}}, "tripped.why: Field required"),
    ],
    ids=["a-field-missing", "nodes-not-a-list", "an-alert-without-its-reason"],
)
def test_a_report_of_another_shape_is_one_line_naming_the_bundle(aws, shape, said):
    head_is(aws, HEAD)
    report_is(aws, json.dumps(shape))
    result = run(CONFIG)
    assert result.exit_code == 1, result.output
    (line,) = errors(result.output)
    assert line.startswith(
        f"error head node {HEAD} (us-east-2): the head's node report has another shape ({said}"
    )
    assert "Traceback" not in result.output

"""Node logs reach CloudWatch, and the log group never blocks a re-create."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest

from gpucluster import names
from gpucluster.agents import emf
from gpucluster.bootstrap import node_logs
from gpucluster.config.loader import load_config
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.conf import SlurmSite
from tests.conftest import EXAMPLE_NAMES, REPO, resources_of
from tests.shell_downloads import fixture_bytes, with_fixture_checksums
from tests.shell_harness import Node
from tests.stacks.stack_templates import stack

AGENT_DEB = Path(node_logs.CLOUDWATCH_AGENT.url).name


def log_groups(template) -> dict[str, dict]:
    return resources_of(template, "AWS::Logs::LogGroup")


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_the_node_log_group_has_a_generated_name_and_is_kept_90_days(synthesized, example_configs, example):
    cfg = example_configs[example]
    cluster = stack(synthesized, example, "cluster")
    groups = log_groups(cluster)
    assert list(groups) == ["NodeLogGroup"]
    group = groups["NodeLogGroup"]
    assert "LogGroupName" not in group["Properties"], "a fixed name collides with the retained group"
    assert group["Properties"]["RetentionInDays"] == node_logs.RETENTION_DAYS == 90
    assert group["DeletionPolicy"] == "Retain"
    assert group["UpdateReplacePolicy"] == "Retain"
    assert f"/gpucluster/{cfg.name}/nodes" not in json.dumps(cluster)


def resolve_log_group(node, group_name: str):
    """Substitutes the log group's Ref in a Fn::Join the way CloudFormation would."""
    if isinstance(node, dict):
        if node == {"Ref": "NodeLogGroup"}:
            return group_name
        if list(node) == ["Fn::Join"]:
            separator, parts = node["Fn::Join"]
            return separator.join(resolve_log_group(part, group_name) for part in parts)
        raise AssertionError(f"unexpected intrinsic in the agent configuration: {node}")
    return node


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_the_agent_configuration_ships_bootstrap_and_slurm_logs_to_that_group(
    synthesized, example_configs, example
):
    cfg = example_configs[example]
    parameters = {
        res["Properties"]["Name"]: res["Properties"]
        for res in resources_of(stack(synthesized, example, "cluster"), "AWS::SSM::Parameter").values()
    }
    parameter = parameters[names.log_agent_config_parameter(cfg)]
    assert parameter["Type"] == "String"
    generated = "demo-cluster-NodeLogGroup-AbCdEf123456"
    config = json.loads(resolve_log_group(parameter["Value"], generated))
    assert len(json.dumps(config)) < 4096, "SSM standard parameters hold 4 KB"
    collected = config["logs"]["logs_collected"]["files"]["collect_list"]
    site = SlurmSite()
    assert {entry["file_path"] for entry in collected} == {
        "/var/log/gpucluster-bootstrap.log",
        site.slurmctld_log_file,
        site.slurmd_log_file,
        # The head's node_repair records each replacement and each ALERT of its bound here.
        "/var/log/gpucluster-node-repair/events.log",
        emf.METRICS_LOG_GLOB,
    }
    for entry in collected:
        assert entry["log_group_name"] == generated
        assert entry["log_stream_name"].startswith("{instance_id}/")
        # The agent would otherwise need logs:PutRetentionPolicy and fight the stack's 90 days.
        assert "retention_in_days" not in entry


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_node_roles_write_logs_only_into_the_node_log_group(synthesized, example):
    roles = resources_of(stack(synthesized, example, "cluster"), "AWS::IAM::Role")
    node_roles = [r for r in roles.values() if "ec2.amazonaws.com" in json.dumps(r["Properties"])]
    assert len(node_roles) == 3
    for role in node_roles:
        statements = [
            statement
            for policy in role["Properties"]["Policies"]
            for statement in policy["PolicyDocument"]["Statement"]
        ]
        logs = [s for s in statements if any(str(a).startswith("logs:") for a in _listed(s["Action"]))]
        assert len(logs) == 1
        assert sorted(_listed(logs[0]["Action"])) == [
            "logs:CreateLogStream",
            "logs:DescribeLogStreams",
            "logs:PutLogEvents",
        ]
        assert logs[0]["Resource"] == {"Fn::GetAtt": ["NodeLogGroup", "Arn"]}


def _listed(value):
    return value if isinstance(value, list) else [value]


def example(name: str):
    return with_fixture_checksums(load_config(REPO / "examples" / f"{name}.yaml"))


@pytest.mark.parametrize("role, group", [("head", None), ("login", None), ("compute", "gpu")])
def test_every_role_starts_the_agent_before_anything_else_can_fail(tmp_path: Path, role, group) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg)
    run = node.run(role, group)
    assert run.returncode == 0, run.output
    start = run.index("amazon-cloudwatch-agent-ctl")
    parameter = names.log_agent_config_parameter(cfg)
    assert run.calls[start] == f"amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s -c ssm:{parameter}"
    # Only the apt-lock wait comes before it: every later step's log is shipped.
    assert run.output.index("step start_log_shipping") < run.output.index("step pin_kernel")
    assert not [c for c in run.calls if AGENT_DEB in c], "the image's agent needs no download"
    assert (node.state / "active/amazon-cloudwatch-agent").exists()


def with_agent_fixture(monkeypatch) -> None:
    """Pins the harness's fixture as the agent release, as the real pin names the real one."""
    digest = hashlib.sha256(fixture_bytes(AGENT_DEB)).hexdigest()
    monkeypatch.setattr(
        node_logs, "CLOUDWATCH_AGENT", dataclasses.replace(node_logs.CLOUDWATCH_AGENT, sha256=digest)
    )


def test_an_image_without_the_agent_installs_the_pinned_release(tmp_path: Path, monkeypatch) -> None:
    with_agent_fixture(monkeypatch)
    node = Node(tmp_path, example("default"), cloudwatch_agent=False)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    download = run.index(f"curl -fsSL --retry 3 -o {node.root}{NODE_LAYOUT.downloads_dir}/{AGENT_DEB}.part")
    installs = [i for i, call in enumerate(run.calls) if call.startswith("apt-get") and " install " in call]
    install = installs[0]
    assert f"{node.root}{NODE_LAYOUT.downloads_dir}/{AGENT_DEB}" in run.calls[install]
    assert download < install < run.index("amazon-cloudwatch-agent-ctl")
    assert "CloudWatch agent 1.300072.0b1766 installed" in run.output


def test_a_tampered_agent_download_stops_the_node(tmp_path: Path, monkeypatch) -> None:
    with_agent_fixture(monkeypatch)
    node = Node(tmp_path, example("default"), cloudwatch_agent=False, corrupt_downloads=(AGENT_DEB,))
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert f"{AGENT_DEB} has sha256" in run.output
    assert "the CloudWatch agent pin (gpucluster/bootstrap/node_logs.py)" in run.output
    assert not run.called("amazon-cloudwatch-agent-ctl")
    assert not [c for c in run.calls if c.startswith("apt-get") and AGENT_DEB in c]


def test_the_real_pin_is_a_versioned_release_url():
    pin = node_logs.CLOUDWATCH_AGENT
    assert pin.url == (
        f"https://amazoncloudwatch-agent.s3.amazonaws.com/ubuntu/amd64/{pin.version}/amazon-cloudwatch-agent.deb"
    )
    assert len(pin.sha256) == 64 and int(pin.sha256, 16) >= 0

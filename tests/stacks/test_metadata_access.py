"""Who on a node reaches the instance role, in every example's synthesized templates: metadata
one hop from the instance, IMDSv2 only and IPv4 only (the bootstrap's guard covers IPv4, so an
IPv6 endpoint would bypass it: gpucluster.bootstrap.metadata_guard), and the role's writes
to EC2 and Auto Scaling scoped to the node itself or the cluster's compute groups."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gpucluster import names
from tests.conftest import EXAMPLE_NAMES, resources_of
from tests.stacks.stack_templates import stack


def _arn(value: Any) -> str:
    """A Fn::Join'ed ARN as text, each Ref as <Name>."""
    if isinstance(value, str):
        return value
    if set(value) == {"Ref"}:
        return f"<{value['Ref']}>"
    separator, parts = value["Fn::Join"]
    return separator.join(_arn(part) for part in parts)


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        statement
        for role in resources_of(template, "AWS::IAM::Role").values()
        for policy in role["Properties"].get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def _with_action(template: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [s for s in _statements(template) if action in json.dumps(s["Action"])]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_launch_template_serves_metadata_one_hop_with_tokens_over_ipv4(
    synthesized, example_configs, example
):
    seen = 0
    for template in synthesized[example].templates.values():
        for resource in resources_of(template, "AWS::EC2::LaunchTemplate").values():
            options = resource["Properties"]["LaunchTemplateData"]["MetadataOptions"]
            assert options["HttpPutResponseHopLimit"] == 1
            assert options["HttpTokens"] == "required"
            assert options["HttpEndpoint"] == "enabled"
            assert options.get("HttpProtocolIpv6", "disabled") == "disabled"
            seen += 1
    # The head's, the login nodes' and one per compute group.
    assert seen == 2 + len(example_configs[example].compute_groups)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_nodes_tag_only_themselves_and_only_with_the_failure_reason(synthesized, example_configs, example):
    cfg = example_configs[example]
    account = cfg.account or "<AWS::AccountId>"
    cluster = stack(synthesized, example, "cluster")
    tagging = _with_action(cluster, "ec2:CreateTags")
    assert len(tagging) == 3  # one per node role
    for statement in tagging:
        assert statement["Action"] == "ec2:CreateTags"
        assert _arn(statement["Resource"]) == f"arn:<AWS::Partition>:ec2:{cfg.region}:{account}:instance/*"
        assert statement["Condition"] == {
            "StringEquals": {"aws:ARN": "${ec2:SourceInstanceARN}"},
            "ForAllValues:StringEquals": {"aws:TagKeys": [names.BOOTSTRAP_FAILURE_TAG]},
        }


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_lifecycle_actions_reach_only_the_clusters_compute_groups(synthesized, example_configs, example):
    cluster = stack(synthesized, example, "cluster")
    for action in ("autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"):
        [statement] = _with_action(cluster, action)
        cfg = example_configs[example]
        account = cfg.account or "<AWS::AccountId>"
        assert _arn(statement["Resource"]) == (
            f"arn:<AWS::Partition>:autoscaling:{cfg.region}:{account}:autoScalingGroup:*:autoScalingGroupName/*"
        )
        assert statement["Condition"] == {
            "StringEquals": {
                f"aws:ResourceTag/{names.CLUSTER_TAG}": cfg.name,
                f"aws:ResourceTag/{names.ROLE_TAG}": "compute",
            }
        }

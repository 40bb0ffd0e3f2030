"""NodeRoles: one role and instance profile per node role. Every role reads the munge
key, the cluster's parameters and the bundle, and ships its logs; only the head resizes
Auto Scaling groups and only compute nodes complete their own launch."""

from __future__ import annotations

from typing import Any

import pytest

from constructs_lib.node_roles import ROLES, NodeRoles, NodeRolesProps
from tests.constructs.small_stack import Built, build

BUCKET_ARN = "arn:aws:s3:::cdk-assets-bucket"
LOG_GROUP_ARN = "arn:aws:logs:us-east-2:123456789012:log-group:nodes:*"
COMMON = {"ReadMungeKey", "ReadClusterFacts", "ReadBootstrapBundle", "ShipNodeLogs", "ReportBootstrapFailure"}


@pytest.fixture(scope="module")
def roles(example_configs) -> Built[NodeRoles]:
    cfg = example_configs["default"]
    props = NodeRolesProps(
        cfg=cfg,
        bundle_bucket_arn=BUCKET_ARN,
        bundle_object_key="bundle.tar.gz",
        slurm_source_object_key="slurm.gz",
        log_group_arn=LOG_GROUP_ARN,
    )
    return build(lambda stack: NodeRoles(stack, "Roles", props), cfg)


def _statements(built: Built[NodeRoles], role: str) -> dict[str, dict[str, Any]]:
    properties = built.resources("AWS::IAM::Role")[
        built.logical_id(built.construct.roles[role].node.default_child)
    ]
    (policy,) = properties["Properties"]["Policies"]
    return {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}


def test_one_role_and_one_profile_per_node_role(roles):
    roles.template.resource_count_is("AWS::IAM::Role", len(ROLES))
    roles.template.resource_count_is("AWS::IAM::InstanceProfile", len(ROLES))
    names = {r["Properties"]["RoleName"] for r in roles.resources("AWS::IAM::Role").values()}
    # The munge key's resource policy trusts exactly this prefix (names.role_name_prefix).
    assert names == {f"gpucluster-demo-us-east-2-{role}" for role in ROLES}


@pytest.mark.parametrize(
    ("role", "only_here"),
    [
        ("head", {"ReadSlurmSource", "ReadCapacityAndInstances", "ResizeClusterGroups", "PublishHeadImage"}),
        ("login", set()),
        ("compute", {"CompleteOwnLaunch", "FindOwnGroup"}),
    ],
)
def test_each_role_has_the_common_statements_and_only_its_own_extras(roles, role, only_here):
    assert set(_statements(roles, role)) == COMMON | only_here


def test_writes_are_limited_to_the_clusters_tagged_resources(roles):
    for role, sid in (
        ("head", "ResizeClusterGroups"),
        ("compute", "CompleteOwnLaunch"),
        ("login", "ReportBootstrapFailure"),
    ):
        condition = _statements(roles, role)[sid]["Condition"]
        assert condition == {"StringEquals": {"aws:ResourceTag/gpucluster:cluster": "demo"}}


def test_the_bundle_and_the_log_group_are_named_exactly(roles):
    statements = _statements(roles, "login")
    assert statements["ReadBootstrapBundle"]["Resource"] == f"{BUCKET_ARN}/bundle.tar.gz"
    assert statements["ShipNodeLogs"]["Resource"] == LOG_GROUP_ARN


def test_only_the_head_reads_the_slurm_source_it_builds(roles):
    assert _statements(roles, "head")["ReadSlurmSource"]["Resource"] == f"{BUCKET_ARN}/slurm.gz"


def test_the_head_may_write_only_its_image_parameter(roles):
    statement = _statements(roles, "head")["PublishHeadImage"]
    assert statement["Action"] == "ssm:PutParameter"
    (_, parts) = statement["Resource"]["Fn::Join"]
    assert parts[-1].endswith(":parameter/gpucluster/demo/head/booted-image")
    assert not any(
        "PutParameter" in str(s["Action"])
        for r in ("login", "compute")
        for s in _statements(roles, r).values()
    )

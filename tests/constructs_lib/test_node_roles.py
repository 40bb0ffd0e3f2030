"""NodeRoles: one role and instance profile per node role. Every role reads the munge
key, the cluster's parameters and the bundle, and ships its logs; only the head resizes
Auto Scaling groups and only compute nodes complete launches, in the cluster's compute
groups; a node tags only itself; login and compute nodes pull images from ECR. The pulls are
judged by moto's IAM policy evaluator against the calls a registry pull makes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from moto.iam.access_control import IAMPolicy, PermissionResult

from gpucluster.bad_input import BadInput
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.constructs_lib.node_roles import ROLES, NodeRoles, NodeRolesProps
from gpucluster.resolved import resolve
from tests.conftest import EXAMPLES
from tests.constructs_lib.small_stack import ACCOUNT, Built, build, deployed

BUCKET_ARN = "arn:aws:s3:::cdk-assets-bucket"
LOG_GROUP_ARN = "arn:aws:logs:us-east-2:123456789012:log-group:nodes:*"
COMMON = {"ReadMungeKey", "ReadClusterFacts", "ReadBootstrapBundle", "ShipNodeLogs", "ReportBootstrapFailure"}
PULL = {"EcrLogin", "PullImages"}
# What an image pull from ECR asks IAM for (docker or `enroot import`): the registry login
# token, then the manifest, each layer's location and the layers' presence.
PULL_CALLS = ("ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer", "ecr:BatchCheckLayerAvailability")


def _build(cfg: ClusterConfig) -> Built[NodeRoles]:
    resolved = resolve(cfg)
    named = resolved.names
    props = NodeRolesProps(
        cluster=cfg.name,
        region=cfg.region,
        account=cfg.account,
        parameter_prefix=named.parameter_prefix,
        munge_secret_name_pattern=named.munge_secret_name_pattern,
        head_image_parameter=named.head_image_parameter,
        role_name_prefix=named.role_name_prefix,
        ecr_repository_arns=resolved.ecr_repository_arns,
        bundle_bucket_arn=BUCKET_ARN,
        bundle_object_key="bundle.tar.gz",
        slurm_source_object_key="slurm.gz",
        log_group_arn=LOG_GROUP_ARN,
    )
    return build(lambda stack: NodeRoles(stack, "Roles", props), cfg)


@pytest.fixture(scope="module")
def roles(example_configs) -> Built[NodeRoles]:
    return _build(example_configs["default"])


def _with_repositories(tmp_path, lines: str) -> ClusterConfig:
    config = tmp_path / "cluster.yaml"
    config.write_text(EXAMPLES[0].read_text() + "software:\n  ecr_repositories:" + lines)
    return load_config(config)


def _policy(built: Built[NodeRoles], role: str) -> IAMPolicy:
    properties = built.resources("AWS::IAM::Role")[
        built.logical_id(built.construct.roles[role].node.default_child)
    ]
    (policy,) = properties["Properties"]["Policies"]
    return IAMPolicy(json.dumps(deployed(policy["PolicyDocument"])))


def _pulls(built: Built[NodeRoles], role: str, repository_arn: str) -> bool:
    """Whether `role` may make every call of a pull from `repository_arn`."""
    policy = _policy(built, role)
    login = policy.is_action_permitted("ecr:GetAuthorizationToken", "*")
    reads = [policy.is_action_permitted(action, repository_arn) for action in PULL_CALLS]
    return login == PermissionResult.PERMITTED and all(r == PermissionResult.PERMITTED for r in reads)


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
        (
            "head",
            {
                "ReadSlurmSource",
                "ReadCapacityAndInstances",
                "ResizeClusterGroups",
                "ReplaceFailedNodes",
                "PublishHeadImage",
                "ReadGpuUtilization",
                "ReadInstanceTopology",
            },
        ),
        ("login", PULL),
        ("compute", {"CompleteComputeLaunches", "FindOwnGroup", "ReadInstanceTopology", *PULL}),
    ],
)
def test_each_role_has_the_common_statements_and_only_its_own_extras(roles, role, only_here):
    assert set(_statements(roles, role)) == COMMON | only_here


def test_only_the_head_reads_metrics_and_no_node_writes_them(roles):
    """The collectors publish through the CloudWatch agent's log shipping (EMF), so no role
    needs cloudwatch:PutMetricData; the head's Slurm agent reads GPU utilization."""
    assert _statements(roles, "head")["ReadGpuUtilization"]["Action"] == "cloudwatch:GetMetricData"
    for role in ROLES:
        assert "cloudwatch:PutMetricData" not in json.dumps(_statements(roles, role))


def test_the_head_resizes_only_the_clusters_tagged_groups(roles):
    condition = _statements(roles, "head")["ResizeClusterGroups"]["Condition"]
    assert condition == {"StringEquals": {"aws:ResourceTag/gpucluster:cluster": "demo"}}


@pytest.mark.parametrize("role", ROLES)
def test_a_node_tags_only_its_own_instance_and_only_with_its_failure_reason(roles, role):
    statement = _statements(roles, role)["ReportBootstrapFailure"]
    assert statement["Action"] == "ec2:CreateTags"
    assert deployed(statement["Resource"]) == f"arn:aws:ec2:us-east-2:{ACCOUNT}:instance/*"
    assert statement["Condition"] == {
        "StringEquals": {"aws:ARN": "${ec2:SourceInstanceARN}"},
        "ForAllValues:StringEquals": {"aws:TagKeys": ["gpucluster:bootstrap-failure"]},
    }
    tagging = [s for s in _statements(roles, role).values() if "ec2:CreateTags" in str(s["Action"])]
    assert tagging == [statement]


def test_compute_nodes_complete_launches_only_in_the_clusters_compute_groups(roles):
    statement = _statements(roles, "compute")["CompleteComputeLaunches"]
    assert deployed(statement["Resource"]) == (
        f"arn:aws:autoscaling:us-east-2:{ACCOUNT}:autoScalingGroup:*:autoScalingGroupName/*"
    )
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/gpucluster:cluster": "demo",
            "aws:ResourceTag/gpucluster:role": "compute",
        }
    }
    for role in ("head", "login"):
        assert "LifecycleAction" not in json.dumps(_statements(roles, role))


def test_the_head_terminates_instances_only_in_the_clusters_compute_groups(roles):
    assert _statements(roles, "head")["ReplaceFailedNodes"]["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/gpucluster:cluster": "demo",
            "aws:ResourceTag/gpucluster:role": "compute",
        }
    }


def test_the_head_terminates_instances_only_through_auto_scaling(roles):
    """node_repair replaces a failed node through its group (which relaunches into the same
    reservation); no role may terminate an EC2 instance directly."""
    assert _statements(roles, "head")["ReplaceFailedNodes"]["Action"] == (
        "autoscaling:TerminateInstanceInAutoScalingGroup"
    )
    for role in ("head", "login", "compute"):
        statements = _statements(roles, role).values()
        assert not any("ec2:TerminateInstances" in str(s["Action"]) for s in statements)


def test_head_and_compute_read_the_instance_topology_only_in_their_region(roles):
    """The head's topology timer, and each compute node placing itself at registration.
    DescribeInstanceTopology takes no resource ARN or tag condition (no EC2 Describe call
    does): the statement grants that one action, narrowed to the cluster's region."""
    for role in ("head", "compute"):
        statement = _statements(roles, role)["ReadInstanceTopology"]
        assert statement["Action"] == "ec2:DescribeInstanceTopology"
        assert statement["Resource"] == "*"
        assert statement["Condition"] == {"StringEquals": {"aws:RequestedRegion": "us-east-2"}}
        policy = _policy(roles, role)
        assert policy.is_action_permitted("ec2:DescribeInstanceTopology", "*") == PermissionResult.PERMITTED
    login = _statements(roles, "login").values()
    assert not any("DescribeInstanceTopology" in str(s["Action"]) for s in login)


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


def test_login_and_compute_pull_from_the_accounts_repositories_in_the_region(roles):
    """Without software.ecr_repositories: every repository of the cluster's account and region,
    nothing elsewhere; the head node runs no images."""
    own = f"arn:aws:ecr:us-east-2:{ACCOUNT}:repository/team/train"
    for role in ("login", "compute"):
        assert _pulls(roles, role, own)
        assert not _pulls(roles, role, "arn:aws:ecr:us-east-2:210987654321:repository/team/train")
        assert not _pulls(roles, role, f"arn:aws:ecr:us-west-2:{ACCOUNT}:repository/team/train")
        statements = _statements(roles, role)
        # GetAuthorizationToken takes no resource ARN (the ECR service authorization reference).
        assert statements["EcrLogin"] == {
            "Action": "ecr:GetAuthorizationToken",
            "Effect": "Allow",
            "Resource": "*",
            "Sid": "EcrLogin",
        }
        assert sorted(statements["PullImages"]["Action"]) == sorted(PULL_CALLS)
        # Reads only: no push, delete or repository administration.
        policy = _policy(roles, role)
        for write in (
            "ecr:PutImage",
            "ecr:InitiateLayerUpload",
            "ecr:BatchDeleteImage",
            "ecr:SetRepositoryPolicy",
        ):
            assert policy.is_action_permitted(write, own) == PermissionResult.NEUTRAL
    assert not _pulls(roles, "head", own)
    assert not PULL & set(_statements(roles, "head"))


def test_listed_repositories_replace_the_default_cross_account_included(tmp_path):
    cfg = _with_repositories(
        tmp_path,
        "\n    - 210987654321.dkr.ecr.us-west-2.amazonaws.com/shared/base"
        "\n    - 123456789012.dkr.ecr.us-east-2.amazonaws.com#team/*"
        "\n    - arn:aws:ecr:us-east-2:123456789012:repository/team/*\n",
    )
    built = _build(cfg)
    for role in ("login", "compute"):
        assert _statements(built, role)["PullImages"]["Resource"] == [
            "arn:aws:ecr:us-east-2:123456789012:repository/team/*",
            "arn:aws:ecr:us-west-2:210987654321:repository/shared/base",
        ]
        assert _pulls(built, role, "arn:aws:ecr:us-west-2:210987654321:repository/shared/base")
        assert _pulls(built, role, f"arn:aws:ecr:us-east-2:{ACCOUNT}:repository/team/train")
        assert not _pulls(built, role, f"arn:aws:ecr:us-east-2:{ACCOUNT}:repository/other")
        assert not _pulls(built, role, "arn:aws:ecr:us-west-2:210987654321:repository/shared/other")


def test_an_empty_list_grants_no_ecr_access(tmp_path):
    built = _build(_with_repositories(tmp_path, " []\n"))
    for role in ROLES:
        assert not PULL & set(_statements(built, role))
        assert not _pulls(built, role, f"arn:aws:ecr:us-east-2:{ACCOUNT}:repository/train")


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ("123456789012.dkr.ecr.us-east-2.amazonaws.com/train:v1", "leave the tag out"),
        # The refusal shows the forms an entry may take.
        ("docker.io/library/ubuntu", "write e.g. 123456789012.dkr.ecr.us-east-2.amazonaws.com/train"),
        ("arn:aws-cn:ecr:us-east-2:123456789012:repository/*", "partition aws, not aws-cn"),
        ("123456789012.dkr.ecr.cn-north-1.amazonaws.com/train", "not served at that domain"),
        ("arn:aws:ecr:us-east-2:12345:repository/train", "is not an ECR repository"),
    ],
)
def test_a_bad_repository_is_refused_with_the_field_and_a_fix(tmp_path, entry, says):
    with pytest.raises(BadInput) as info:
        _with_repositories(tmp_path, f"\n    - '{entry}'\n")
    message = str(info.value)
    assert "software.ecr_repositories.0" in message and says in message, message

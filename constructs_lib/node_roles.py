"""IAM roles of the head, login and compute nodes: least privilege per role.

Every role can read the munge key, the cluster's SSM parameters and the
bootstrap bundle, write its logs into the cluster's log group only, and use
Session Manager. Only the head node reads the Slurm source (it builds the package
the other nodes install) and may resize the
cluster's Auto Scaling groups (the capacity-block controller) and terminate a failed
node's instance in them (node_repair); only compute
nodes complete launch lifecycle actions, in the cluster's compute groups. A node tags only
itself, and only with the bootstrap's failure reason. Login and
compute nodes, which import and run images (`enroot import`, Pyxis), may pull from
the ECR repositories `software.ecr_repositories` names (by default every repository
of the cluster's account in its region).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.nag import acknowledge

ROLES = ("head", "login", "compute")
SSM_CORE = {
    "Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/AmazonSSMManagedInstanceCore"]]
}
ASSUMED_BY_EC2 = {
    "Statement": [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}}
    ],
    "Version": "2012-10-17",
}


@dataclass(frozen=True)
class Allow:
    """One Allow statement of a role's policy, written as iam.PolicyStatement writes it."""

    sid: str
    actions: list[str]
    resource: str | tuple[str, ...]
    conditions: Mapping[str, Mapping[str, str | list[str]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        actions = sorted(set(self.actions))
        resources = [self.resource] if isinstance(self.resource, str) else list(self.resource)
        statement: dict[str, Any] = {
            "Action": actions[0] if len(actions) == 1 else actions,
            "Effect": "Allow",
            "Resource": resources[0] if len(resources) == 1 else resources,
            "Sid": self.sid,
        }
        if self.conditions:
            statement["Condition"] = self.conditions
        return statement


@dataclass(frozen=True)
class NodeRolesProps:
    cluster: str
    region: str
    # None: the account the CLI deploys to.
    account: str | None
    # The cluster's names (gpucluster.resolved.ClusterNames) its roles are scoped to.
    parameter_prefix: str
    munge_secret_name_pattern: str
    head_image_parameter: str
    role_name_prefix: str
    # The ECR repositories login and compute nodes pull from, as ARNs; None: every
    # repository of the account in the region.
    ecr_repository_arns: tuple[str, ...] | None
    bundle_bucket_arn: str
    bundle_object_key: str
    # The Slurm source the head builds, in the bundle's bucket.
    slurm_source_object_key: str
    # The node log group's ARN (GetAtt Arn, which ends in ":*" and so covers its streams).
    log_group_arn: str
    # The accounting database's password secret, which the head alone reads; None: no database.
    accounting_db_secret_name_pattern: str | None = None
    # A munge key secret shared with other clusters (accounting.munge_key_secret), read instead
    # of the one munge_secret_name_pattern names; None: the cluster's own.
    munge_secret_arn: str | None = None
    # The REST API's JWT key secret, which the head alone reads; None: no REST API.
    rest_api_jwt_secret_name_pattern: str | None = None


class NodeRoles(Construct):
    """`roles[role]` stands where an iam.Role stood (its role is its default child, "Resource")."""

    roles: dict[str, Construct]
    instance_profiles: dict[str, Resource]

    def __init__(self, scope: Construct, id: str, props: NodeRolesProps) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        prefix = props.parameter_prefix

        def secret_arn_matching(pattern: str) -> str:
            return stack.format_arn(
                service="secretsmanager",
                resource="secret",
                resource_name=pattern,
                arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
            )

        secret_arn = props.munge_secret_arn or secret_arn_matching(props.munge_secret_name_pattern)
        parameters_arn = stack.format_arn(
            service="ssm", resource="parameter", resource_name=prefix.lstrip("/") + "/*"
        )
        cluster_tag = {f"aws:ResourceTag/{names.CLUSTER_TAG}": props.cluster}
        pull_images = self._pull_images(props.ecr_repository_arns, stack)
        common = [
            Allow(sid="ReadMungeKey", actions=["secretsmanager:GetSecretValue"], resource=secret_arn),
            Allow(
                sid="ReadClusterFacts",
                actions=["ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath"],
                resource=parameters_arn,
            ),
            Allow(
                sid="ReadBootstrapBundle",
                actions=["s3:GetObject"],
                resource=f"{props.bundle_bucket_arn}/{props.bundle_object_key}",
            ),
            Allow(
                sid="ShipNodeLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resource=props.log_group_arn,
            ),
            Allow(
                # lib/failure.sh tags the node with why its bootstrap failed: only the instance
                # the role's session was issued to (ec2:SourceInstanceARN, a global key) may be
                # tagged (aws:ARN, the tagged resource's ARN, which IAM's list of global keys
                # leaves out: were it missing, the tag would be refused, and it is best effort),
                # and only with that tag.
                sid="ReportBootstrapFailure",
                actions=["ec2:CreateTags"],
                resource=stack.format_arn(service="ec2", resource="instance", resource_name="*"),
                conditions={
                    "StringEquals": {"aws:ARN": "${ec2:SourceInstanceARN}"},
                    "ForAllValues:StringEquals": {"aws:TagKeys": [names.BOOTSTRAP_FAILURE_TAG]},
                },
            ),
        ]
        # The head's topology timer and each compute node placing itself at registration.
        # EC2's Describe* calls take no resource ARN or tag condition; the region narrows it.
        read_topology = Allow(
            sid="ReadInstanceTopology",
            actions=["ec2:DescribeInstanceTopology"],
            resource="*",
            conditions={"StringEquals": {"aws:RequestedRegion": props.region}},
        )
        extra = {
            "head": [
                read_topology,
                Allow(
                    sid="ReadSlurmSource",
                    actions=["s3:GetObject"],
                    resource=f"{props.bundle_bucket_arn}/{props.slurm_source_object_key}",
                ),
                Allow(
                    sid="ReadCapacityAndInstances",
                    actions=[
                        "ec2:DescribeCapacityReservations",
                        "ec2:DescribeInstances",
                        "autoscaling:DescribeAutoScalingGroups",
                    ],
                    resource="*",
                ),
                Allow(
                    # The Slurm metrics agent reads the GPUs' utilization the nodes published.
                    sid="ReadGpuUtilization",
                    actions=["cloudwatch:GetMetricData"],
                    resource="*",
                ),
                Allow(
                    # The head publishes the kernel its AMI boots (names.head_image_parameter).
                    sid="PublishHeadImage",
                    actions=["ssm:PutParameter"],
                    resource=stack.format_arn(
                        service="ssm",
                        resource="parameter",
                        resource_name=props.head_image_parameter.lstrip("/"),
                    ),
                ),
                Allow(
                    sid="ResizeClusterGroups",
                    actions=["autoscaling:SetDesiredCapacity", "autoscaling:UpdateAutoScalingGroup"],
                    resource="*",
                    conditions={"StringEquals": cluster_tag},
                ),
                Allow(
                    # node_repair: a failed node's instance, terminated so its group replaces
                    # it; only in this cluster's compute groups (the login group is no repair's).
                    sid="ReplaceFailedNodes",
                    actions=["autoscaling:TerminateInstanceInAutoScalingGroup"],
                    resource="*",
                    conditions={
                        "StringEquals": {**cluster_tag, f"aws:ResourceTag/{names.ROLE_TAG}": "compute"}
                    },
                ),
                *(
                    [
                        Allow(
                            sid="ReadAccountingDatabasePassword",
                            actions=["secretsmanager:GetSecretValue"],
                            resource=secret_arn_matching(props.accounting_db_secret_name_pattern),
                        )
                    ]
                    if props.accounting_db_secret_name_pattern
                    else []
                ),
                *(
                    [
                        Allow(
                            sid="ReadRestApiJwtKey",
                            actions=["secretsmanager:GetSecretValue"],
                            resource=secret_arn_matching(props.rest_api_jwt_secret_name_pattern),
                        )
                    ]
                    if props.rest_api_jwt_secret_name_pattern
                    else []
                ),
            ],
            "login": pull_images,
            "compute": [
                *pull_images,
                read_topology,
                Allow(
                    # Heartbeats keep the launch hook alive while a slow node boots (lib/heartbeat.sh).
                    # Auto Scaling authorizes these on the group alone (its resource type
                    # autoScalingGroup, keys aws:ResourceTag and autoscaling:ResourceTag): no
                    # key names the instance, so a node could answer for another node of the
                    # cluster's compute groups. What keeps users from doing so is that only
                    # root reaches the role's credentials (gpucluster.bootstrap.metadata_guard).
                    sid="CompleteComputeLaunches",
                    actions=[
                        "autoscaling:CompleteLifecycleAction",
                        "autoscaling:RecordLifecycleActionHeartbeat",
                    ],
                    resource=stack.format_arn(
                        service="autoscaling",
                        resource="autoScalingGroup",
                        resource_name="*:autoScalingGroupName/*",
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    ),
                    conditions={
                        "StringEquals": {**cluster_tag, f"aws:ResourceTag/{names.ROLE_TAG}": "compute"}
                    },
                ),
                Allow(
                    sid="FindOwnGroup",
                    actions=["autoscaling:DescribeAutoScalingInstances"],
                    resource="*",
                ),
            ],
        }
        self.roles = {}
        self.instance_profiles = {}
        for role in ROLES:
            node_role = Construct(self, f"{role.capitalize()}Role")
            policy = {
                "Statement": [statement.to_json() for statement in common + extra[role]],
                "Version": "2012-10-17",
            }
            cfn_role = resource(
                node_role,
                "Resource",
                "AWS::IAM::Role",
                {
                    "AssumeRolePolicyDocument": ASSUMED_BY_EC2,
                    "Description": f"gpucluster {props.cluster} {role} nodes",
                    "ManagedPolicyArns": [SSM_CORE],
                    "Policies": [{"PolicyDocument": policy, "PolicyName": "node"}],
                    "RoleName": f"{props.role_name_prefix}{role}",
                },
            )
            acknowledge(
                node_role,
                "IAM4",
                "AmazonSSMManagedInstanceCore is the AWS-maintained minimum for Session Manager "
                "access, which replaces SSH keys on every node",
                findings=("Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonSSMManagedInstanceCore",),
            )
            acknowledge(
                node_role,
                "IAM5",
                "Scoped wildcards: parameters under this cluster's prefix only; CreateTags only "
                "on the node's own instance (aws:ARN equal to ec2:SourceInstanceARN) and only "
                "with the bootstrap failure tag; Auto Scaling "
                "writes and lifecycle actions only on groups tagged "
                f"{names.CLUSTER_TAG} with this cluster's name (lifecycle actions: and "
                f"{names.ROLE_TAG} compute); Describe* calls, "
                "cloudwatch:GetMetricData and ecr:GetAuthorizationToken accept no resource ARN; "
                "image pulls only from the ECR repositories software.ecr_repositories names "
                "(default: this account's, in this region)",
                findings=self._wildcard_findings(props, role),
            )
            self.roles[role] = node_role
            self.instance_profiles[role] = resource(
                self,
                f"{role.capitalize()}Profile",
                "AWS::IAM::InstanceProfile",
                {"Roles": [cfn_role.ref_token]},
            )

    @staticmethod
    def _pull_images(listed: tuple[str, ...] | None, stack: cdk.Stack) -> list[Allow]:
        """ECR reads for the roles that import and run images; none when the config lists no repository."""
        repositories = (
            (stack.format_arn(service="ecr", resource="repository", resource_name="*"),)
            if listed is None
            else listed
        )
        if not repositories:
            return []
        return [
            # The registry login token (`aws ecr get-login-password`) is not tied to a repository.
            Allow(sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resource="*"),
            Allow(
                sid="PullImages",
                actions=[
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                    "ecr:BatchCheckLayerAvailability",
                ],
                resource=repositories,
            ),
        ]

    @staticmethod
    def _wildcard_findings(props: NodeRolesProps, role: str) -> tuple[str, ...]:
        account = props.account or "<AWS::AccountId>"
        arn = f"arn:<AWS::Partition>:{{service}}:{props.region}:{account}:{{resource}}"
        findings = [
            "Resource::" + arn.format(service="ssm", resource=f"parameter{props.parameter_prefix}/*"),
            "Resource::" + arn.format(service="ec2", resource="instance/*"),
        ]
        if role == "compute":
            findings.append(
                "Resource::"
                + arn.format(service="autoscaling", resource="autoScalingGroup:*:autoScalingGroupName/*")
            )
        pulls = role in ("login", "compute")
        listed = props.ecr_repository_arns
        if role in ("head", "compute") or (pulls and listed != ()):
            findings.append("Resource::*")
        if pulls and listed is None:
            findings.append("Resource::" + arn.format(service="ecr", resource="repository/*"))
        elif pulls and listed:
            findings += sorted(f"Resource::{found}" for found in listed if "*" in found)
        return tuple(findings)

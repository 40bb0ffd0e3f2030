"""IAM roles of the head, login and compute nodes: least privilege per role.

Every role can read the munge key, the cluster's SSM parameters and the
bootstrap bundle, write its logs into the cluster's log group only, and use
Session Manager. Only the head node may resize the
cluster's Auto Scaling groups (the capacity-block controller); only compute
nodes complete their own launch lifecycle action and tag themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from constructs import Construct

from constructs_lib.nag import acknowledge
from gpucluster import names
from gpucluster.config import ClusterConfig

ROLES = ("head", "login", "compute")


@dataclass(frozen=True)
class NodeRolesProps:
    cfg: ClusterConfig
    bundle_bucket_arn: str
    bundle_object_key: str
    # The node log group's ARN (GetAtt Arn, which ends in ":*" and so covers its streams).
    log_group_arn: str


class NodeRoles(Construct):
    roles: dict[str, iam.Role]
    instance_profiles: dict[str, iam.CfnInstanceProfile]

    def __init__(self, scope: Construct, id: str, props: NodeRolesProps) -> None:
        super().__init__(scope, id)
        cfg = props.cfg
        stack = cdk.Stack.of(self)
        prefix = names.parameter_prefix(cfg)
        secret_arn = stack.format_arn(
            service="secretsmanager",
            resource="secret",
            resource_name=names.munge_secret_name_pattern(cfg),
            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
        )
        parameters_arn = stack.format_arn(
            service="ssm", resource="parameter", resource_name=prefix.lstrip("/") + "/*"
        )
        cluster_tag = {f"aws:ResourceTag/{names.CLUSTER_TAG}": cfg.name}
        common = [
            iam.PolicyStatement(
                sid="ReadMungeKey", actions=["secretsmanager:GetSecretValue"], resources=[secret_arn]
            ),
            iam.PolicyStatement(
                sid="ReadClusterFacts",
                actions=["ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath"],
                resources=[parameters_arn],
            ),
            iam.PolicyStatement(
                sid="ReadBootstrapBundle",
                actions=["s3:GetObject"],
                resources=[f"{props.bundle_bucket_arn}/{props.bundle_object_key}"],
            ),
            iam.PolicyStatement(
                sid="ShipNodeLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"],
                resources=[props.log_group_arn],
            ),
            iam.PolicyStatement(
                sid="ReportBootstrapFailure",
                actions=["ec2:CreateTags"],
                resources=[stack.format_arn(service="ec2", resource="instance", resource_name="*")],
                conditions={"StringEquals": cluster_tag},
            ),
        ]
        extra = {
            "head": [
                iam.PolicyStatement(
                    sid="ReadCapacityAndInstances",
                    actions=[
                        "ec2:DescribeCapacityReservations",
                        "ec2:DescribeInstances",
                        "autoscaling:DescribeAutoScalingGroups",
                    ],
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    # The head publishes the kernel its AMI boots (names.head_image_parameter).
                    sid="PublishHeadImage",
                    actions=["ssm:PutParameter"],
                    resources=[
                        stack.format_arn(
                            service="ssm",
                            resource="parameter",
                            resource_name=names.head_image_parameter(cfg).lstrip("/"),
                        )
                    ],
                ),
                iam.PolicyStatement(
                    sid="ResizeClusterGroups",
                    actions=["autoscaling:SetDesiredCapacity", "autoscaling:UpdateAutoScalingGroup"],
                    resources=["*"],
                    conditions={"StringEquals": cluster_tag},
                ),
            ],
            "login": [],
            "compute": [
                iam.PolicyStatement(
                    sid="CompleteOwnLaunch",
                    # Heartbeats keep the launch hook alive while a slow node boots (lib/heartbeat.sh).
                    actions=[
                        "autoscaling:CompleteLifecycleAction",
                        "autoscaling:RecordLifecycleActionHeartbeat",
                    ],
                    resources=["*"],
                    conditions={"StringEquals": cluster_tag},
                ),
                iam.PolicyStatement(
                    sid="FindOwnGroup",
                    actions=["autoscaling:DescribeAutoScalingInstances"],
                    resources=["*"],
                ),
            ],
        }
        self.roles = {}
        self.instance_profiles = {}
        for role in ROLES:
            node_role = iam.Role(
                self,
                f"{role.capitalize()}Role",
                role_name=f"{names.role_name_prefix(cfg)}{role}",
                assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
                description=f"gpucluster {cfg.name} {role} nodes",
                managed_policies=[
                    iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSSMManagedInstanceCore")
                ],
                inline_policies={
                    "node": iam.PolicyDocument(statements=common + extra[role]),
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
                "Scoped wildcards: parameters under this cluster's prefix only; CreateTags, "
                "Auto Scaling writes and lifecycle actions only on resources tagged "
                f"{names.CLUSTER_TAG} with this cluster's name; Describe* calls accept no resource ARN",
                findings=self._wildcard_findings(cfg, role),
            )
            self.roles[role] = node_role
            self.instance_profiles[role] = iam.CfnInstanceProfile(
                self, f"{role.capitalize()}Profile", roles=[node_role.role_name]
            )

    @staticmethod
    def _wildcard_findings(cfg: ClusterConfig, role: str) -> tuple[str, ...]:
        account = cfg.account or "<AWS::AccountId>"
        arn = f"arn:<AWS::Partition>:{{service}}:{cfg.region}:{account}:{{resource}}"
        findings = [
            "Resource::" + arn.format(service="ssm", resource=f"parameter{names.parameter_prefix(cfg)}/*"),
            "Resource::" + arn.format(service="ec2", resource="instance/*"),
        ]
        if role in ("head", "compute"):
            findings.append("Resource::*")
        return tuple(findings)

"""A way in per person through Session Manager: shells as the caller's own account.

Session Manager starts a shell as the account named by the caller's principal tag
SSMSessionRunAs when the session's document turns Run As on. The cluster's document does,
and the cluster's policy lets a principal start a session only on the cluster's login
nodes, only with that document or with ssh's port forwarding, and only while its
SSMSessionRunAs tag names one of `users:`. An administrator tags each person's IAM role (or
user) and attaches the policy (`gpucluster users access` prints the commands).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.nag import acknowledge
from gpucluster.constructs_lib.node_roles import Allow

# Minutes without input before Session Manager ends a shell: its own default, written out so
# the account's preferences do not decide it. Work that outlives it belongs in sbatch (or
# tmux), which an ended shell does not stop.
IDLE_SESSION_MINUTES = 20
# The agent starts `sh` in its own working directory with HOME set, not the account's login
# shell: start the bash a person gets through ssh, at home. An account without a home
# (ssm-user) stays in that sh.
LOGIN_SHELL = "cd ~ && exec bash --login"


@dataclass(frozen=True)
class UserSessionsProps:
    region: str
    # None: the account the CLI deploys to.
    account: str | None
    # The document's and the policy's names (gpucluster.names).
    document_name: str
    policy_name: str
    # The tags every login instance carries and no other node does (tag key -> value).
    login_tags: Mapping[str, str]
    # The login names of users:, the only accounts a session may run as.
    user_names: tuple[str, ...]
    # The account a caller without the tag gets: the agent's shared one, which has no sudo.
    default_user: str


class UserSessions(Construct):
    document: Resource
    policy: Resource

    def __init__(self, scope: Construct, id: str, props: UserSessionsProps) -> None:
        super().__init__(scope, id)
        if not props.user_names:
            raise ValueError("a way in for nobody: user_names is empty")
        stack = cdk.Stack.of(self)

        def arn(service: str, resource: str, name: str, account: str | None = props.account) -> str:
            return stack.format_arn(
                service=service, region=props.region, account=account, resource=resource, resource_name=name
            )

        self.document = resource(
            self,
            "Document",
            "AWS::SSM::Document",
            {
                "Content": {
                    "description": "A shell as the caller's own account (its SSMSessionRunAs tag)",
                    "inputs": {
                        # The schema marks both required; no bucket or log group is named, so
                        # they only ask that one named later be encrypted.
                        "cloudWatchEncryptionEnabled": True,
                        "idleSessionTimeout": str(IDLE_SESSION_MINUTES),
                        "runAsDefaultUser": props.default_user,
                        "runAsEnabled": True,
                        "s3EncryptionEnabled": True,
                        "shellProfile": {"linux": LOGIN_SHELL},
                    },
                    "schemaVersion": "1.0",
                    "sessionType": "Standard_Stream",
                },
                "DocumentType": "Session",
                "Name": props.document_name,
                # A content change makes a new default version of the same document: the
                # default, Replace, would create a second document of the fixed name first.
                "UpdateMethod": "NewVersion",
            },
        )
        people = {f"aws:PrincipalTag/{names.RUN_AS_TAG}": list(props.user_names)}
        # Without it a caller who names no document gets SSM-SessionManagerRunShell, the
        # account's default, whatever this policy lists (Session Manager's documentation:
        # every statement that allows StartSession must carry it).
        document_check = {"BoolIfExists": {"ssm:SessionDocumentAccessCheck": "true"}}
        login_tags = {f"ssm:resourceTag/{key}": value for key, value in sorted(props.login_tags.items())}
        statements = [
            Allow(
                sid="StartSessionsOnLoginNodes",
                actions=["ssm:StartSession"],
                resource=arn("ec2", "instance", "*"),
                conditions={"StringEquals": {**login_tags, **people}, **document_check},
            ),
            Allow(
                sid="WithTheClusterDocuments",
                actions=["ssm:StartSession"],
                resource=(
                    arn("ssm", "document", props.document_name),
                    # AWS's own documents have no account in their ARN.
                    arn("ssm", "document", names.SSH_SESSION_DOCUMENT, account=""),
                ),
                conditions={"StringEquals": people, **document_check},
            ),
            Allow(
                # Session Manager tags each session with its caller's aws:userid, for users
                # and assumed roles alike (a session id starts with an IAM user's name only).
                sid="EndAndResumeOwnSessions",
                actions=["ssm:TerminateSession", "ssm:ResumeSession"],
                resource=arn("ssm", "session", "*"),
                conditions={
                    "StringEquals": people,
                    "StringLike": {"ssm:resourceTag/aws:ssmmessages:session-id": "${aws:userid}"},
                },
            ),
            Allow(
                # Finding the login nodes' instance ids, and one's own sessions to resume.
                sid="FindLoginNodesAndSessions",
                actions=["ec2:DescribeInstances", "ssm:DescribeSessions"],
                resource="*",
                conditions={"StringEquals": {**people, "aws:RequestedRegion": props.region}},
            ),
        ]
        self.policy = resource(
            self,
            "Policy",
            "AWS::IAM::ManagedPolicy",
            {
                "Description": f"Session Manager into the login nodes as one's own account of users: "
                f"(the principal's {names.RUN_AS_TAG} tag)",
                "ManagedPolicyName": props.policy_name,
                "PolicyDocument": {
                    "Statement": [statement.to_json() for statement in statements],
                    "Version": "2012-10-17",
                },
            },
        )
        found = (
            f"Resource::arn:<AWS::Partition>:{{}}:{props.region}:{props.account or '<AWS::AccountId>'}:{{}}"
        )
        acknowledge(
            self.policy,
            "IAM5",
            "Scoped wildcards: sessions only on instances tagged as this cluster's login nodes and "
            "only one's own sessions (the aws:ssmmessages:session-id tag); ec2:DescribeInstances and "
            "ssm:DescribeSessions accept no resource ARN and are held to the cluster's region; every "
            f"statement needs the caller's {names.RUN_AS_TAG} tag to name one of users:",
            findings=(found.format("ec2", "instance/*"), found.format("ssm", "session/*"), "Resource::*"),
        )
        document_output = cdk.CfnOutput(
            self,
            "DocumentName",
            value=props.document_name,
            description="Session document of the cluster's people: aws ssm start-session --document-name "
            "this (gpucluster users access prints each person's commands)",
        )
        document_output.override_logical_id(names.SESSION_DOCUMENT_OUTPUT)
        policy_output = cdk.CfnOutput(
            self,
            "PolicyArn",
            value=self.policy.ref_token,
            description=f"Attach to each person's IAM role, tagged {names.RUN_AS_TAG}=<their name under "
            "users:> (gpucluster users access prints the commands); detach before deleting this stack",
        )
        policy_output.override_logical_id(names.PEOPLE_POLICY_OUTPUT)

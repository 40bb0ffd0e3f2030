"""UserSessions: a Session document that runs a shell as the caller's own account (Run As,
the closed ssm-user for a caller without the tag), and a policy that lets a principal tagged
with one of users: start sessions on the cluster's login nodes alone, with that document or
ssh's, and end only its own sessions. The policy is judged request by request
(tests/iam_requests.py), so a condition that went missing shows as a request let through."""

from __future__ import annotations

from typing import Any

import pytest

from gpucluster.constructs_lib.user_sessions import (
    IDLE_SESSION_MINUTES,
    UserSessions,
    UserSessionsProps,
)
from tests.constructs_lib.small_stack import ACCOUNT, Built, build, deployed
from tests.iam_requests import Request, allows

REGION = "us-east-2"
DOCUMENT = "gpucluster-demo-sessions"
PROPS = UserSessionsProps(
    region=REGION,
    account=ACCOUNT,
    document_name=DOCUMENT,
    policy_name="gpucluster-demo-us-east-2-people",
    login_tags={"gpucluster:cluster": "demo", "gpucluster:role": "login"},
    user_names=("alice", "bob"),
    default_user="ssm-user",
)
INSTANCE = f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/i-0123456789abcdef0"
LOGIN_NODE = {"ssm:resourceTag/gpucluster:cluster": "demo", "ssm:resourceTag/gpucluster:role": "login"}
ALICE = {"aws:PrincipalTag/SSMSessionRunAs": "alice", "aws:userid": "AROAEXAMPLE:alice"}
CHECKED = {"ssm:SessionDocumentAccessCheck": "true"}


def document_arn(name: str, account: str = ACCOUNT) -> str:
    return f"arn:aws:ssm:{REGION}:{account}:document/{name}"


SSH_DOCUMENT = document_arn("AWS-StartSSHSession", account="")


@pytest.fixture(scope="module")
def sessions() -> Built[UserSessions]:
    return build(lambda stack: UserSessions(stack, "UserSessions", PROPS))


@pytest.fixture(scope="module")
def policy(sessions) -> dict[str, Any]:
    return deployed(sessions.only("AWS::IAM::ManagedPolicy")["PolicyDocument"])


def test_the_document_runs_a_shell_as_the_callers_own_account(sessions):
    document = sessions.only("AWS::SSM::Document")
    assert (document["DocumentType"], document["Name"]) == ("Session", DOCUMENT)
    content = document["Content"]
    assert (content["schemaVersion"], content["sessionType"]) == ("1.0", "Standard_Stream")
    inputs = content["inputs"]
    assert inputs["runAsEnabled"] is True
    # A caller without SSMSessionRunAs gets the shared account every node keeps without sudo.
    assert inputs["runAsDefaultUser"] == "ssm-user"
    # Session Manager takes 1 to 60 minutes, as a string.
    assert inputs["idleSessionTimeout"] == str(IDLE_SESSION_MINUTES)
    assert 1 <= IDLE_SESSION_MINUTES <= 60


def test_a_new_content_is_a_new_version_of_the_same_document(sessions):
    """Replace (the default) would create a second document of the fixed name first, which fails."""
    assert sessions.only("AWS::SSM::Document")["UpdateMethod"] == "NewVersion"


@pytest.mark.parametrize(
    "resource",
    [INSTANCE, document_arn(DOCUMENT), SSH_DOCUMENT],
    ids=["login node", "the cluster's document", "ssh"],
)
def test_a_tagged_person_starts_sessions_on_a_login_node(policy, resource):
    context = {**ALICE, **CHECKED, **(LOGIN_NODE if resource == INSTANCE else {})}
    assert allows(policy, Request("ssm:StartSession", resource, context))


@pytest.mark.parametrize(
    "principal",
    [
        {"aws:userid": "AROAEXAMPLE:eve"},
        {"aws:PrincipalTag/SSMSessionRunAs": "mallory", "aws:userid": "AROAEXAMPLE:mallory"},
        {"aws:PrincipalTag/SSMSessionRunAs": "root", "aws:userid": "AROAEXAMPLE:root"},
    ],
    ids=["untagged", "not under users:", "root"],
)
def test_a_principal_whose_tag_names_no_user_gets_nothing(policy, principal):
    for request in (
        Request("ssm:StartSession", INSTANCE, {**principal, **CHECKED, **LOGIN_NODE}),
        Request("ssm:StartSession", document_arn(DOCUMENT), {**principal, **CHECKED}),
        Request("ssm:StartSession", SSH_DOCUMENT, {**principal, **CHECKED}),
        Request("ec2:DescribeInstances", "*", {**principal, "aws:RequestedRegion": REGION}),
    ):
        assert not allows(policy, request), request


@pytest.mark.parametrize(
    "node",
    [
        {"ssm:resourceTag/gpucluster:cluster": "demo", "ssm:resourceTag/gpucluster:role": "head"},
        {"ssm:resourceTag/gpucluster:cluster": "demo", "ssm:resourceTag/gpucluster:role": "compute"},
        {"ssm:resourceTag/gpucluster:cluster": "other", "ssm:resourceTag/gpucluster:role": "login"},
        {"ssm:resourceTag/gpucluster:cluster": "demo"},
        {},
    ],
    ids=["head", "compute", "another cluster's login node", "no role tag", "untagged"],
)
def test_no_instance_but_the_clusters_login_nodes(policy, node):
    assert not allows(policy, Request("ssm:StartSession", INSTANCE, {**ALICE, **CHECKED, **node}))


@pytest.mark.parametrize(
    "name", ["SSM-SessionManagerRunShell", "AWS-StartPortForwardingSession", "AWS-StartInteractiveCommand"]
)
def test_no_other_session_document(policy, name):
    for account in (ACCOUNT, ""):
        request = Request("ssm:StartSession", document_arn(name, account), {**ALICE, **CHECKED})
        assert not allows(policy, request)


def test_every_statement_that_starts_a_session_checks_the_document(policy):
    """Without the check a caller who names no document gets the account's default one
    (SSM-SessionManagerRunShell) on any instance the policy allows."""
    starting = [s for s in policy["Statement"] if "ssm:StartSession" in str(s["Action"])]
    assert len(starting) == 2
    for statement in starting:
        assert statement["Condition"]["BoolIfExists"] == CHECKED


def test_people_end_and_resume_only_their_own_sessions(policy):
    session = f"arn:aws:ssm:{REGION}:{ACCOUNT}:session/alice-0a1b2c3d4e5f"
    own = {**ALICE, "ssm:resourceTag/aws:ssmmessages:session-id": "AROAEXAMPLE:alice"}
    other = {**ALICE, "ssm:resourceTag/aws:ssmmessages:session-id": "AROAEXAMPLE:bob"}
    for action in ("ssm:TerminateSession", "ssm:ResumeSession"):
        assert allows(policy, Request(action, session, own))
        assert not allows(policy, Request(action, session, other))


def test_people_find_login_nodes_only_in_the_clusters_region(policy):
    assert allows(policy, Request("ec2:DescribeInstances", "*", {**ALICE, "aws:RequestedRegion": REGION}))
    assert not allows(
        policy, Request("ec2:DescribeInstances", "*", {**ALICE, "aws:RequestedRegion": "eu-west-1"})
    )


def test_nothing_else_is_allowed(policy):
    actions = sorted(
        {
            a
            for s in policy["Statement"]
            for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        }
    )
    assert actions == [
        "ec2:DescribeInstances",
        "ssm:DescribeSessions",
        "ssm:ResumeSession",
        "ssm:StartSession",
        "ssm:TerminateSession",
    ]


def test_the_outputs_name_the_document_and_the_policy(sessions):
    outputs = sessions.template.to_json()["Outputs"]
    assert outputs["SessionDocumentName"]["Value"] == DOCUMENT
    policy_id = next(iter(sessions.resources("AWS::IAM::ManagedPolicy")))
    assert outputs["PeoplePolicyArn"]["Value"] == {"Ref": policy_id}
    assert "SSMSessionRunAs" in outputs["PeoplePolicyArn"]["Description"]


def test_a_way_in_for_nobody_is_refused():
    from dataclasses import replace

    with pytest.raises(ValueError, match="nobody"):
        build(lambda stack: UserSessions(stack, "UserSessions", replace(PROPS, user_names=())))

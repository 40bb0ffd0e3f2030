"""A secret Secrets Manager generates at deploy time and only named roles may read: the munge
key (every node) and the REST API's JWT signing key (the head alone).

The value never passes through a template, user data or log: nodes read it with their
instance role, and a resource policy refuses GetSecretValue to every other principal.
It is retained when its stack is deleted, so its name carries a suffix from the stack id: a
re-created stack makes a new secret instead of failing on the old name. Nodes find its ARN
in SSM (names.storage_parameter).
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.nag import acknowledge


@dataclass(frozen=True)
class GeneratedSecretProps:
    description: str
    length: int
    name_prefix: str
    # IAM role names that may read it, as an ArnLike pattern's resource part ("prefix*" or a name).
    reader_role_names: str
    policy_sid: str
    # Why the secret is not rotated automatically (cdk-nag SMG4).
    why_not_rotated: str


def generated_secret(scope: Construct, props: GeneratedSecretProps) -> Resource:
    """The secret (child "Secret") and its resource policy (child "OnlyClusterRoles") in `scope`."""
    stack = cdk.Stack.of(scope)
    secret = resource(
        scope,
        "Secret",
        "AWS::SecretsManager::Secret",
        {
            "Description": props.description,
            "GenerateSecretString": {
                "ExcludePunctuation": True,
                "IncludeSpace": False,
                "PasswordLength": props.length,
            },
            "Name": cdk.Fn.join("", [props.name_prefix, stack_id_suffix(stack)]),
        },
    )
    secret.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
    acknowledge(secret, "SMG4", props.why_not_rotated)
    role_pattern = stack.format_arn(
        service="iam", region="", resource="role", resource_name=props.reader_role_names
    )
    deny_others = {
        "Action": "secretsmanager:GetSecretValue",
        "Condition": {"ArnNotLike": {"aws:PrincipalArn": role_pattern}},
        "Effect": "Deny",
        "Principal": {"AWS": "*"},
        "Resource": "*",
        "Sid": props.policy_sid,
    }
    resource(
        scope,
        "OnlyClusterRoles",
        "AWS::SecretsManager::ResourcePolicy",
        {
            "BlockPublicPolicy": True,
            "ResourcePolicy": {"Statement": [deny_others], "Version": "2012-10-17"},
            "SecretId": secret.ref_token,
        },
    )
    return secret


def stack_id_suffix(stack: cdk.Stack) -> str:
    """The last group of the stack id's UUID: 12 hex characters, new for each created stack.

    AWS::StackId is arn:...:stack/<name>/<8>-<4>-<4>-<4>-<12>; it stays the same across
    updates, so the name (create-only) does not change on update.
    """
    uuid = cdk.Fn.select(2, cdk.Fn.split("/", stack.stack_id))
    return cdk.Fn.select(4, cdk.Fn.split("-", uuid))

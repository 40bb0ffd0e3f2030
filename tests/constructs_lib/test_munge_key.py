"""MungeKey: a secret Secrets Manager generates at deploy (never a value in the template),
retained with its stack, readable only by the cluster's instance roles."""

from __future__ import annotations

import json

import pytest

from gpucluster.constructs_lib.munge_key import MungeKey, MungeKeyProps
from gpucluster.munge_key import MUNGE_KEY_LENGTH
from tests.constructs_lib.small_stack import Built, build, ref

PROPS = MungeKeyProps(secret_name_prefix="gpucluster/demo/munge-", reader_role_name_prefix="gpucluster-demo-")


@pytest.fixture(scope="module")
def key() -> Built[MungeKey]:
    return build(lambda stack: MungeKey(stack, "Munge", PROPS))


def test_the_key_is_generated_at_deploy_and_retained(key):
    (secret,) = key.resources("AWS::SecretsManager::Secret").values()
    assert secret["DeletionPolicy"] == secret["UpdateReplacePolicy"] == "Retain"
    properties = secret["Properties"]
    assert "SecretString" not in properties
    assert properties["GenerateSecretString"]["PasswordLength"] == MUNGE_KEY_LENGTH == 1024


def test_the_name_carries_a_suffix_from_the_stack_id(key):
    # A re-created stack makes a new secret instead of colliding with the retained one.
    prefix, suffix = key.only("AWS::SecretsManager::Secret")["Name"]["Fn::Join"][1]
    assert prefix == PROPS.secret_name_prefix
    assert '{"Ref": "AWS::StackId"}' in json.dumps(suffix)


def test_only_the_clusters_roles_may_read_the_key(key):
    policy = key.only("AWS::SecretsManager::ResourcePolicy")
    assert policy["SecretId"] == ref(key, key.construct.secret)
    assert policy["BlockPublicPolicy"] is True
    (statement,) = policy["ResourcePolicy"]["Statement"]
    assert (statement["Effect"], statement["Action"], statement["Principal"]) == (
        "Deny",
        "secretsmanager:GetSecretValue",
        {"AWS": "*"},
    )
    pattern = statement["Condition"]["ArnNotLike"]["aws:PrincipalArn"]
    assert json.dumps(pattern).endswith(f':role/{PROPS.reader_role_name_prefix}*"]]}}')

"""The munge secret survives a stack delete (retained) without blocking a re-create."""

from __future__ import annotations

import fnmatch
import json

import pytest

from gpucluster import names
from gpucluster.config.loader import load_config
from tests.conftest import EXAMPLE_NAMES, REPO, resources_of
from tests.shell_downloads import with_fixture_checksums
from tests.shell_harness import Node
from tests.stacks.stack_templates import stack

STACK_IDS = (
    "arn:aws:cloudformation:us-east-1:123456789012:stack/demo-storage/51af3dc0-da77-11e4-872e-1234567db123",
    "arn:aws:cloudformation:us-east-1:123456789012:stack/demo-storage/9c2e1a40-b1f2-11ef-9a3b-0a1b2c3d4e5f",
)


def evaluate(value, stack_id: str):
    """The few intrinsics the secret's name uses, as CloudFormation evaluates them."""
    if isinstance(value, str):
        return value
    ((fn, args),) = value.items()
    if fn == "Ref":
        assert args == "AWS::StackId", f"unexpected Ref {args}"
        return stack_id
    if fn == "Fn::Join":
        sep, parts = args
        return sep.join(evaluate(part, stack_id) for part in parts)
    if fn == "Fn::Split":
        sep, source = args
        return evaluate(source, stack_id).split(sep)
    if fn == "Fn::Select":
        index, source = args
        listed = evaluate(source, stack_id)
        return listed[int(index)]
    raise AssertionError(f"unexpected intrinsic {fn}")


def secret_of(template):
    secrets = resources_of(template, "AWS::SecretsManager::Secret")
    # Beside it may sit the accounting database's secret (accounting.database); the munge
    # key's logical id stays, so the diff guard follows it.
    assert "MungeKeySecret" in secrets, list(secrets)
    return secrets["MungeKeySecret"]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_each_created_stack_gets_its_own_secret_name(synthesized, example_configs, example):
    cfg = example_configs[example]
    secret = secret_of(stack(synthesized, example, "storage"))
    assert secret["DeletionPolicy"] == "Retain"
    first, second = (evaluate(secret["Properties"]["Name"], sid) for sid in STACK_IDS)
    assert first == f"{names.munge_secret_name_prefix(cfg)}1234567db123"
    assert second == f"{names.munge_secret_name_prefix(cfg)}0a1b2c3d4e5f"
    # Secrets Manager appends "-" and six characters to the name in the ARN.
    for name in (first, second):
        assert fnmatch.fnmatchcase(name + "-AbC123", names.munge_secret_name_pattern(cfg))
    assert not fnmatch.fnmatchcase(
        f"gpucluster/{cfg.name}-other/munge-key-1234567db123-AbC123", names.munge_secret_name_pattern(cfg)
    )


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_nodes_find_the_secret_through_its_published_arn(synthesized, example_configs, example):
    cfg = example_configs[example]
    parameters = {
        res["Properties"]["Name"]: res["Properties"]["Value"]
        for res in resources_of(stack(synthesized, example, "storage"), "AWS::SSM::Parameter").values()
    }
    assert parameters[names.storage_parameter(cfg, "munge_secret_arn")] == {"Ref": "MungeKeySecret"}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_node_roles_read_only_this_clusters_munge_secrets(synthesized, example_configs, example):
    cfg = example_configs[example]
    cluster = json.dumps(stack(synthesized, example, "cluster"))
    assert names.munge_secret_name_pattern(cfg) in cluster
    assert f'gpucluster/{cfg.name}/munge-key-??????"' not in cluster, "the old fixed-name scope"
    storage = secret_of(stack(synthesized, example, "storage"))
    assert storage["Properties"]["Name"] != f"gpucluster/{cfg.name}/munge-key"


def test_a_node_without_the_published_arn_stops_and_says_which_parameter(tmp_path) -> None:
    cfg = with_fixture_checksums(load_config(REPO / "examples" / "default.yaml"))
    node = Node(tmp_path, cfg)
    facts = node.state / "ssm"
    facts.write_text(
        "".join(line for line in facts.read_text().splitlines(True) if "munge_secret_arn" not in line)
    )
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert f"SSM parameter {names.storage_parameter(cfg, 'munge_secret_arn')} is missing" in run.output
    assert not run.called("aws --region us-east-2 secretsmanager")
    assert not [call for call in run.calls if "secretsmanager get-secret-value" in call]

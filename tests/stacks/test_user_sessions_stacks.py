"""The people's way in in the synthesized Cluster stack of the example that lists people
(mixed.yaml): its policy names exactly the config's users and matches the tags the login
nodes' launch template really gives them; a cluster without people, or without login nodes,
has none of it. cdk-nag, cfn-lint and the tag rules judge it with every example
(tests/synth/test_nag.py, tests/stacks/test_stacks.py, tests/constructs_lib/test_cfn_tags.py)."""

from __future__ import annotations

import pytest

from gpucluster import names
from gpucluster.config import ClusterConfig
from gpucluster.synth.app import synthesize
from tests.conftest import resources_of
from tests.stacks.stack_templates import stack

EXAMPLE = "mixed"


@pytest.fixture(scope="module")
def cluster(synthesized, example_configs):
    assert example_configs[EXAMPLE].users
    return stack(synthesized, EXAMPLE, "cluster")


def _statements(template: dict) -> dict[str, dict]:
    (policy,) = resources_of(template, "AWS::IAM::ManagedPolicy").values()
    return {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}


def test_the_policy_lets_in_exactly_the_configs_people(cluster, example_configs):
    people = [user.name for user in example_configs[EXAMPLE].users]
    for statement in _statements(cluster).values():
        assert statement["Condition"]["StringEquals"]["aws:PrincipalTag/SSMSessionRunAs"] == people


def test_the_policy_matches_the_tags_the_login_nodes_are_launched_with(cluster):
    (login_template,) = [
        r["Properties"]["LaunchTemplateData"]
        for logical, r in resources_of(cluster, "AWS::EC2::LaunchTemplate").items()
        if logical.startswith("LoginNodes")
    ]
    (instance_tags,) = [
        {tag["Key"]: tag["Value"] for tag in spec["Tags"]}
        for spec in login_template["TagSpecifications"]
        if spec["ResourceType"] == "instance"
    ]
    condition = _statements(cluster)["StartSessionsOnLoginNodes"]["Condition"]["StringEquals"]
    wanted = {
        key.removeprefix("ssm:resourceTag/"): value
        for key, value in condition.items()
        if "resourceTag" in key
    }
    assert wanted == {names.CLUSTER_TAG: EXAMPLE, names.ROLE_TAG: "login"}
    assert wanted.items() <= instance_tags.items()


def test_the_outputs_name_the_deployed_document_and_policy(cluster):
    (document,) = resources_of(cluster, "AWS::SSM::Document").values()
    (policy_id,) = resources_of(cluster, "AWS::IAM::ManagedPolicy")
    outputs = cluster["Outputs"]
    assert outputs[names.SESSION_DOCUMENT_OUTPUT]["Value"] == document["Properties"]["Name"]
    assert document["Properties"]["Name"] == f"gpucluster-{EXAMPLE}-sessions"
    assert outputs[names.PEOPLE_POLICY_OUTPUT]["Value"] == {"Ref": policy_id}
    # No export: nothing else may pin the stateless stack.
    assert all("Export" not in output for output in outputs.values())


def test_a_cluster_without_people_has_no_way_in_to_hand_out(synthesized, example_configs):
    for example, cfg in example_configs.items():
        if cfg.users:
            continue
        template = stack(synthesized, example, "cluster")
        assert not resources_of(template, "AWS::SSM::Document"), example
        assert not resources_of(template, "AWS::IAM::ManagedPolicy"), example
        assert "Outputs" not in template, example


def test_people_without_login_nodes_get_none_either(tmp_path, example_configs):
    data = example_configs[EXAMPLE].model_dump(mode="json")
    data["login_nodes"]["count"] = 0
    templates = synthesize(ClusterConfig.model_validate(data), tmp_path).templates
    template = next(t for name, t in templates.items() if name.endswith("-cluster"))
    assert not resources_of(template, "AWS::SSM::Document")
    assert not resources_of(template, "AWS::IAM::ManagedPolicy")

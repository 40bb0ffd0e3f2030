"""The resource schemas the diff classifies by: which types hold data, and the rules of
property_rules (documented replacements cfn-lint's schemas still lack, properties fixed at
creation, properties that only grow) checked against those schemas."""

from __future__ import annotations

import pytest

from gpucluster.diff.property_rules import RULES, Effect
from gpucluster.diff.resource_schemas import resource_schema, stateful_types
from tests.diff_stacks import REGION


def test_stateful_types_come_from_cfn_lint_and_cover_the_cluster_data():
    wanted = {
        "AWS::FSx::FileSystem",
        "AWS::EFS::FileSystem",
        "AWS::SecretsManager::Secret",
        "AWS::EC2::Volume",
        "AWS::S3::Bucket",
        "AWS::DynamoDB::Table",
        "AWS::RDS::DBInstance",
        "AWS::RDS::DBCluster",
        "AWS::Logs::LogGroup",
    }
    assert wanted <= stateful_types()


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.effect}:{r.pointer}")
def test_each_rule_names_a_real_property_the_schema_does_not_already_replace_on(rule):
    schema = resource_schema(rule.resource_type, REGION)
    node = schema
    for segment in rule.pointer.split("/")[2:]:
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[-1]]
        assert segment in node.get("properties", {}), f"{rule.pointer}: no such property in the schema"
        node = node["properties"][segment]
    # A create-only pointer is a replacement already: a REPLACES rule would be redundant, a
    # FIXED or GROWS one wrong (a replaced resource is new, nothing is updated in place).
    assert rule.pointer not in schema.get("createOnlyProperties", []), (
        f"cfn-lint's schema now declares {rule.pointer} create-only; drop or rethink its rule"
    )
    assert rule.source.startswith("https://docs.aws.amazon.com/")
    if rule.effect == Effect.GROWS:
        assert rule.check is not None

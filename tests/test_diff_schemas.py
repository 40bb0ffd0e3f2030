"""The resource schemas the diff classifies by: which types hold data, and the
documented replacements cfn-lint's schemas still lack."""

from __future__ import annotations

import pytest

from gpucluster.diff.resource_schemas import DOCUMENTED_REPLACEMENTS, resource_schema, stateful_types
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


@pytest.mark.parametrize(
    ("resource_type", "pointer"),
    [(t, p) for t, pointers in DOCUMENTED_REPLACEMENTS.items() for p in pointers],
)
def test_documented_replacements_name_real_properties_the_schema_still_lacks(resource_type, pointer):
    schema = resource_schema(resource_type, REGION)
    node = schema
    for segment in pointer.split("/")[2:]:
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[-1]]
        assert segment in node.get("properties", {}), f"{pointer}: no such property in the schema"
        node = node["properties"][segment]
    assert pointer not in schema.get("createOnlyProperties", []), (
        f"cfn-lint's schema now declares {pointer}; drop it from DOCUMENTED_REPLACEMENTS"
    )

"""The CloudWatch agent configuration every node fetches is valid for the agent itself:
checked against the agent's own JSON schema (vendored, tests/fixtures/cloudwatch-agent)."""

from __future__ import annotations

import hashlib
import json

import jsonschema
import pytest

from gpucluster.bootstrap import node_logs
from gpucluster.node_files import LOG_GROUP_SLOT, with_log_group
from gpucluster.slurm.conf import SlurmSite
from tests.conftest import REPO

VENDORED = REPO / "tests" / "fixtures" / "cloudwatch-agent"


def schema_validator() -> jsonschema.Draft4Validator:
    schema = json.loads((VENDORED / "schema.json").read_text())
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    return jsonschema.Draft4Validator(schema)


def test_the_vendored_schema_is_the_recorded_file():
    recorded = (VENDORED / "PROVENANCE.md").read_text()
    assert hashlib.sha256((VENDORED / "schema.json").read_bytes()).hexdigest() in recorded


def test_the_node_agent_configuration_validates():
    config = with_log_group(node_logs.agent_config(LOG_GROUP_SLOT, SlurmSite()), "demo-NodeLogGroup-AbC")
    errors = sorted(schema_validator().iter_errors(config), key=str)
    assert errors == []
    files = config["logs"]["logs_collected"]["files"]["collect_list"]  # type: ignore[index,call-overload]
    metrics = [entry for entry in files if entry["file_path"].endswith(".emf")]
    assert metrics and metrics[0]["auto_removal"] is True


@pytest.mark.parametrize(
    "broken",
    [
        {"logs": {"logs_collected": {"files": {"collect_list": [{"log_group_name": "g"}]}}}},
        {
            "logs": {
                "logs_collected": {"files": {"collect_list": [{"file_path": "/x", "auto_removal": "yes"}]}}
            }
        },
        {"logs": {"logs_collected": {"files": {"collect_list": [{"file_path": "/x", "timezone": "CET"}]}}}},
    ],
)
def test_the_schema_refuses_what_the_agent_refuses(broken):
    assert list(schema_validator().iter_errors(broken))

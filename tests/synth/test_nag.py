"""cdk-nag AwsSolutions runs on every example and stops synth on a new finding.

`gpucluster synth` leaves it out unless asked (`--nag`); the CDK app (`cdk synth|deploy`),
CI and this suite run it. The templates are the same either way (tests/synth/test_cdk_cli.py and
tests/synth/test_synth_command.py compare them byte for byte).
"""

from __future__ import annotations

import json

import pytest

from gpucluster.synth.app import build_app, synth_app
from gpucluster.synth.cdk_runtime import cdk_context
from gpucluster.synth.nag import NagFindings
from tests.conftest import EXAMPLE_NAMES


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_every_example_passes_nag(synthesized, example):
    # The session synth runs with nag (tests/conftest.py); the report is written only when it ran.
    report = json.loads((synthesized[example].outdir / "validation-report.json").read_text())
    assert [p for p in report["pluginReports"] if p.get("conclusion") != "success"] == []


def test_a_new_finding_fails_synth(tmp_path, example_configs):
    from aws_cdk import aws_s3 as s3

    cfg = example_configs["default"]
    app = build_app(cfg, outdir=str(tmp_path), context=cdk_context())
    storage = app.node.find_child(f"{cfg.name}-storage")
    s3.CfnBucket(storage, "PlantedBucket")
    with pytest.raises(NagFindings, match="ValidationFailed"):
        synth_app(app, nag=True)
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failing = {
        violation["ruleName"]: [c["constructPath"] for c in violation["violatingConstructs"]]
        for plugin in report["pluginReports"]
        if plugin["pluginName"] == "AwsSolutions" and plugin["conclusion"] == "failure"
        for violation in plugin["violations"]
    }
    assert set(failing) == {"AwsSolutions-S1", "AwsSolutions-S10"}, "only the planted bucket's findings"
    assert all(paths == [f"{cfg.name}-storage/PlantedBucket"] for paths in failing.values())


def test_without_nag_a_finding_does_not_stop_synth(tmp_path, example_configs):
    from aws_cdk import aws_s3 as s3

    cfg = example_configs["default"]
    app = build_app(cfg, outdir=str(tmp_path), context=cdk_context())
    s3.CfnBucket(app.node.find_child(f"{cfg.name}-storage"), "PlantedBucket")
    synth_app(app, nag=False)
    assert not (tmp_path / "validation-report.json").exists()


def test_the_checks_see_the_resources_the_constructs_build(tmp_path, example_configs, monkeypatch):
    """gpucluster.constructs_lib builds core CfnResources, which no cdk-nag rule recognizes by class;
    the checks judge them as their L1s. Without the head node's acknowledgement its
    finding is back, named by the construct path of the synthesized app."""
    from gpucluster.constructs_lib import head_node

    monkeypatch.setattr(head_node, "acknowledge", lambda *args, **kwargs: None)
    cfg = example_configs["default"]
    app = build_app(cfg, outdir=str(tmp_path), context=cdk_context())
    with pytest.raises(NagFindings):
        synth_app(app, nag=True)
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failing = {
        violation["ruleName"]: [c["constructPath"] for c in violation["violatingConstructs"]]
        for plugin in report["pluginReports"]
        if plugin["conclusion"] == "failure"
        for violation in plugin["violations"]
    }
    assert failing == {"AwsSolutions-EC29": [f"{cfg.name}-cluster/HeadNode/Instance"]}

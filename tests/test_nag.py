"""cdk-nag AwsSolutions runs on every stack at synth and stops on a new finding."""

from __future__ import annotations

import json

import pytest

from gpucluster.synth.app import build_app
from gpucluster.synth.cdk_runtime import cdk_context


def test_a_new_finding_fails_synth(tmp_path, example_configs):
    from aws_cdk import aws_s3 as s3

    cfg = example_configs["default"]
    app = build_app(cfg, outdir=str(tmp_path), context=cdk_context())
    storage = app.node.find_child(f"{cfg.name}-storage")
    s3.CfnBucket(storage, "PlantedBucket")
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failing = {
        violation["ruleName"]: [c["constructPath"] for c in violation["violatingConstructs"]]
        for plugin in report["pluginReports"]
        if plugin["pluginName"] == "AwsSolutions" and plugin["conclusion"] == "failure"
        for violation in plugin["violations"]
    }
    assert set(failing) == {"AwsSolutions-S1", "AwsSolutions-S10"}, "only the planted bucket's findings"
    assert all(paths == [f"{cfg.name}-storage/PlantedBucket"] for paths in failing.values())

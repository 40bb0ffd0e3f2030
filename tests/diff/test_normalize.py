"""What is not a change: identical templates, asset hashes and CDK bookkeeping."""

from __future__ import annotations

import json

from gpucluster.diff import diff_templates, normalize_template
from tests.diff_stacks import (
    ASSET,
    CLUSTER,
    LOGIN,
    OTHER_ASSET,
    REGION,
    STORAGE,
    cluster_template,
    edited,
    stacks,
)


def test_identical_templates_have_no_changes():
    report = diff_templates(stacks(), stacks(), region=REGION)
    assert report.changes == ()
    assert report.exit_code == 0


def test_asset_hash_and_cdk_bookkeeping_changes_are_not_changes():
    def churn(t):
        t[CLUSTER] = cluster_template(asset=OTHER_ASSET)
        t[CLUSTER]["Resources"]["CDKMetadata"]["Properties"]["Analytics"] = "v2:deflate64:other"
        t[CLUSTER]["Resources"][LOGIN]["Metadata"] = {"aws:cdk:path": "demo-cluster/Login/Moved"}
        t[STORAGE]["Parameters"]["BootstrapVersion"]["Default"] = "/cdk-bootstrap/other/version"

    current = edited(churn)
    assert json.dumps(current) != json.dumps(stacks())
    report = diff_templates(stacks(), current, region=REGION)
    assert report.changes == ()


def test_normalization_keeps_what_reaches_resources():
    normalized = normalize_template(cluster_template())
    assert "CDKMetadata" not in normalized["Resources"]
    assert "Parameters" not in normalized and "Rules" not in normalized
    assert "Metadata" not in normalized["Resources"][LOGIN]
    text = json.dumps(normalized)
    assert ASSET not in text and "<asset-hash>.tar.gz" in text
    # A checksum that is not an asset object name is content and must stay visible.
    template = cluster_template()
    template["Resources"][LOGIN]["Properties"]["Tags"] = [{"Key": "sha", "Value": ASSET}]
    assert ASSET in json.dumps(normalize_template(template))

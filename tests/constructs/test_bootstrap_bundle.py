"""BootstrapBundle: the rendered bundle as one file asset, and the sha256 nodes check it
against. No resource: the bucket is the CDK bootstrap's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gpucluster.bootstrap.userdata import archive_sha256, bundle_archive, render_bundle
from gpucluster.infra.constructs.bootstrap_bundle import BootstrapBundle, BootstrapBundleProps
from tests.constructs.small_stack import Built, build


@pytest.fixture(scope="module")
def assembly(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bundle-assembly")


@pytest.fixture(scope="module")
def bundle(example_configs, assembly) -> Built[BootstrapBundle]:
    cfg = example_configs["default"]
    return build(lambda stack: BootstrapBundle(stack, "Bundle", BootstrapBundleProps(cfg=cfg)), cfg, assembly)


@pytest.fixture(scope="module")
def asset(bundle, assembly) -> tuple[dict[str, Any], bytes]:
    """The bundle's entry in the asset manifest, and the staged file it uploads."""
    manifest = json.loads((assembly / "Small.assets.json").read_text())
    (entry,) = [f for f in manifest["files"].values() if f["displayName"] == "Bundle/Asset"]
    return entry, (assembly / entry["source"]["path"]).read_bytes()


def test_the_uploaded_file_is_the_rendered_bundle_and_matches_the_baked_sha256(
    bundle, asset, example_configs
):
    _, staged = asset
    assert staged == bundle_archive(render_bundle(example_configs["default"]))
    assert bundle.construct.ref.sha256 == hashlib.sha256(staged).hexdigest() == archive_sha256(staged)


def test_nodes_and_the_role_policy_point_at_the_uploaded_object(bundle, asset):
    entry, _ = asset
    (destination,) = entry["destinations"].values()
    assert entry["source"]["packaging"] == "file"
    assert bundle.construct.object_key == destination["objectKey"]
    url = json.dumps(bundle.stack.resolve(bundle.construct.ref.url))
    assert f"s3://{destination['bucketName']}/{destination['objectKey']}" in url


def test_the_bundle_adds_no_resource(bundle):
    assert bundle.template.to_json().get("Resources", {}) == {}

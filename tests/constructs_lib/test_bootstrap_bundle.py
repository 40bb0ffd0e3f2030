"""BootstrapBundle: the rendered bundle as one file asset, staged byte for byte, and its
URL. No resource: the bucket is the CDK bootstrap's."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from gpucluster.constructs_lib.bootstrap_bundle import BootstrapBundle, BootstrapBundleProps
from tests.constructs_lib.small_stack import Built, build


@pytest.fixture(scope="module")
def assembly(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("bundle-assembly")


# Any bytes: the construct stages what it is given, whatever the archive holds.
ARCHIVE = bytes(range(256)) * 3
SHA256 = hashlib.sha256(ARCHIVE).hexdigest()


@pytest.fixture(scope="module")
def bundle(example_configs, assembly) -> Built[BootstrapBundle]:
    cfg = example_configs["default"]
    props = BootstrapBundleProps(archive=ARCHIVE, sha256=SHA256)
    return build(lambda stack: BootstrapBundle(stack, "Bundle", props), cfg, assembly)


@pytest.fixture(scope="module")
def asset(bundle, assembly) -> tuple[dict[str, Any], bytes]:
    """The bundle's entry in the asset manifest, and the staged file it uploads."""
    manifest = json.loads((assembly / "Small.assets.json").read_text())
    (entry,) = [f for f in manifest["files"].values() if f["displayName"] == "Bundle/Asset"]
    return entry, (assembly / entry["source"]["path"]).read_bytes()


def test_the_uploaded_file_is_the_archive_as_given(asset):
    _, staged = asset
    assert staged == ARCHIVE


def test_the_asset_is_named_by_the_archive_s_sha256(asset, assembly):
    entry, _ = asset
    (destination,) = entry["destinations"].values()
    assert entry["source"]["path"] == f"asset.{SHA256}.tar.gz"
    assert destination["objectKey"] == f"{SHA256}.gz"
    assert not list(assembly.glob(".*.partial"))


def test_nodes_and_the_role_policy_point_at_the_uploaded_object(bundle, asset):
    entry, _ = asset
    (destination,) = entry["destinations"].values()
    assert entry["source"]["packaging"] == "file"
    assert bundle.construct.object_key == destination["objectKey"]
    url = json.dumps(bundle.stack.resolve(bundle.construct.url))
    assert f"s3://{destination['bucketName']}/{destination['objectKey']}" in url


def test_the_bundle_adds_no_resource(bundle):
    assert bundle.template.to_json().get("Resources", {}) == {}

"""One asset-hash mask for the diff guard and the snapshot tests: every case either of
the two former regexes masked is masked, and a checksum that names no asset is not."""

from __future__ import annotations

import pytest

from gpucluster.diff import ASSET_HASH, mask_asset_hashes, normalize_template

HASH = "5672e5440e772f936a325aba798e1f0789c74448a0ddcd398a6482c1a30a9e43"
BUCKET = "s3://cdk-hnb659fds-assets-${AWS::AccountId}-us-east-2"


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        # The snapshot tests' former regex: S3 object keys ending .tar.gz, .gz, .zip, .json.
        (f"{BUCKET}/{HASH}.gz", f"{BUCKET}/{ASSET_HASH}.gz"),
        (f"{HASH}.tar.gz", f"{ASSET_HASH}.tar.gz"),
        (f"{HASH}.zip", f"{ASSET_HASH}.zip"),
        (f"{HASH}.json", f"{ASSET_HASH}.json"),
        # The diff's former regexes, which the snapshot one missed: more archive
        # endings, container image tags, the legacy synthesizer's asset parameters.
        (f"{HASH}.tgz", f"{ASSET_HASH}.tgz"),
        (f"{HASH}.jar", f"{ASSET_HASH}.jar"),
        (
            f"123456789012.dkr.ecr.us-east-2.amazonaws.com/cdk-hnb659fds:{HASH}",
            f"123456789012.dkr.ecr.us-east-2.amazonaws.com/cdk-hnb659fds:{ASSET_HASH}",
        ),
        (f"AssetParameters{HASH}S3Bucket0A1B2C3D", f"AssetParameters{ASSET_HASH}S3Bucket"),
    ],
)
def test_asset_hashes_are_masked(text, masked):
    assert mask_asset_hashes(text) == masked


@pytest.mark.parametrize(
    "text",
    [
        # The bundle checksum the user-data verifies is content: a change must show.
        f'readonly BUNDLE_SHA256="{HASH}"',
        f"{HASH} ",
        f"{HASH}.json5",
        f"{HASH}0.gz",  # 65 hex digits: not a sha256
    ],
)
def test_a_checksum_that_names_no_asset_stays_visible(text):
    assert mask_asset_hashes(text) == text


def test_masking_reaches_keys_and_nested_values_and_leaves_other_types():
    template = {
        "Parameters": {f"AssetParameters{HASH}ArtifactHash0A1B2C3D": {"Type": "String"}},
        "Resources": {"Fn": {"Properties": {"Code": [{"S3Key": f"{HASH}.zip"}], "Size": 64, "On": True}}},
    }
    assert mask_asset_hashes(template) == {
        "Parameters": {f"AssetParameters{ASSET_HASH}ArtifactHash": {"Type": "String"}},
        "Resources": {
            "Fn": {"Properties": {"Code": [{"S3Key": f"{ASSET_HASH}.zip"}], "Size": 64, "On": True}}
        },
    }


def test_the_diff_normalizes_with_the_same_mask():
    template = {
        "Resources": {
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Code": {"S3Key": f"{HASH}.tgz"}}}
        }
    }
    assert normalize_template(template) == mask_asset_hashes(template)

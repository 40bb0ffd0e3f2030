"""Snapshots of every example's templates; `make snapshots` accepts a change on purpose.

Only what legitimately varies between equal inputs is normalized: asset file
hashes in S3 keys. Everything else, the user-data included, is compared.
"""

from __future__ import annotations

import re

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from tests.conftest import EXAMPLE_NAMES

ASSET_KEY = re.compile(r"\b[0-9a-f]{64}(\.(tar\.gz|gz|zip|json))\b")


def normalized(value):
    if isinstance(value, dict):
        return {key: normalized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    if isinstance(value, str):
        return ASSET_KEY.sub(r"<asset-hash>\1", value)
    return value


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
@pytest.mark.parametrize("layer", ["network", "storage", "cluster"])
def test_template_snapshot(synthesized, snapshot_json, example, layer):
    templates = synthesized[example].templates
    (template,) = [t for name, t in templates.items() if name.endswith(f"-{layer}")]
    assert normalized(template) == snapshot_json

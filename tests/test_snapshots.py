"""Snapshots of every example's templates; `make snapshots` accepts a change on purpose.

Only what legitimately varies between equal inputs is normalized: asset hashes,
masked by the same function `gpucluster diff` uses. Everything else, the user-data
included, is compared.
"""

from __future__ import annotations

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from gpucluster.diff.asset_hashes import mask_asset_hashes
from tests.conftest import EXAMPLE_NAMES


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
@pytest.mark.parametrize("layer", ["network", "storage", "cluster"])
def test_template_snapshot(synthesized, snapshot_json, example, layer):
    templates = synthesized[example].templates
    (template,) = [t for name, t in templates.items() if name.endswith(f"-{layer}")]
    assert mask_asset_hashes(template) == snapshot_json

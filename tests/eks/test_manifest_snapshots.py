"""Snapshots of the Kubernetes files synth writes and of what helm renders from them;
`pytest tests/eks/test_manifest_snapshots.py --snapshot-update` accepts a change on purpose."""

from __future__ import annotations

import pytest
import yaml

from gpucluster.eks.manifests import render_manifests
from tests.conftest import EXAMPLE_NAMES

# The chart generates these keys at random on every render (slurmKey.create, jwtKey.create).
RANDOM_SECRETS = {"slurm-auth-slurm", "slurm-auth-jwt"}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_manifests_snapshot(clusters, snapshot, example):
    assert render_manifests(clusters[f"example-{example}"]) == snapshot


def test_helm_output_snapshot(rendered, snapshot):
    docs = []
    for doc in rendered["example-default"]:
        if doc["kind"] == "Secret" and doc["metadata"]["name"] in RANDOM_SECRETS:
            doc = {**doc, "data": "<random>"}
        docs.append(doc)
    assert yaml.safe_dump_all(docs, sort_keys=True) == snapshot

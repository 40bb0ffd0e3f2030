"""Snapshots of the Kubernetes files synth writes and of what helm renders from them;
`pytest tests/eks/test_manifest_snapshots.py --snapshot-update` accepts a change on purpose."""

from __future__ import annotations

import pytest
import yaml

from gpucluster.eks import accounts
from gpucluster.eks.manifests import render_manifests
from tests.conftest import EXAMPLE_NAMES

# The chart generates these keys at random on every render (slurmKey.create, jwtKey.create).
RANDOM_SECRETS = {"slurm-auth-slurm", "slurm-auth-jwt"}


def _without_agent_sources(files: dict[str, str]) -> dict[str, str]:
    """The accounts agent's tree stands for itself (test_accounts checks each file is the
    repository's), so a change to an agent does not show here."""
    docs = list(yaml.safe_load_all(files["objects.yaml"]))
    for doc in docs:
        if doc["kind"] == "ConfigMap" and doc["metadata"]["name"] == accounts.CONFIGMAP:
            doc["data"] |= {key: f"<{key}>" for key in accounts.agent_files()}
    return {**files, "objects.yaml": yaml.safe_dump_all(docs, sort_keys=False)}


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_manifests_snapshot(clusters, snapshot, example):
    assert _without_agent_sources(render_manifests(clusters[f"example-{example}"])) == snapshot


def test_helm_output_snapshot(rendered, snapshot):
    docs = []
    for doc in rendered["example-default"]:
        if doc["kind"] == "Secret" and doc["metadata"]["name"] in RANDOM_SECRETS:
            doc = {**doc, "data": "<random>"}
        docs.append(doc)
    assert yaml.safe_dump_all(docs, sort_keys=True) == snapshot

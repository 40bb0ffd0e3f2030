"""The vendored device plugin charts are their upstream files, unchanged, with their licence,
at the versions gpucluster.constructs_lib.eks.versions records."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from gpucluster.constructs_lib.eks.versions import EFA_DEVICE_PLUGIN, NVIDIA_DEVICE_PLUGIN
from gpucluster.eks import device_plugins
from gpucluster.stacks.eks_software import EFA_CHART, NVIDIA_CHART

# chart directory -> (its vendored root holding LICENSE and PROVENANCE, the upstream commit)
VENDORED = {
    NVIDIA_CHART: (NVIDIA_DEVICE_PLUGIN, "3c378193fcebf6e955f0d65bd6f2aeed099ad8ea"),
    EFA_CHART: (EFA_DEVICE_PLUGIN, "bfe91c4b9257c80f754ad4b3d6a9a3c239b2b8ec"),
}


def root_of(chart):
    return chart.parent.parent


def provenance_hashes(root) -> dict[str, str]:
    lines = (root / "PROVENANCE").read_text().splitlines()
    pairs = (line.split("  ", 1) for line in lines if line and not line.startswith("#") and "  " in line)
    return {path: digest for digest, path in pairs}


@pytest.mark.parametrize("chart", VENDORED, ids=lambda chart: chart.name)
def test_every_vendored_file_matches_provenance(chart):
    root = root_of(chart)
    on_disk = {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in root.rglob("*")
        if path.is_file() and path.name != "PROVENANCE"
    }
    assert on_disk == provenance_hashes(root)


@pytest.mark.parametrize("chart", VENDORED, ids=lambda chart: chart.name)
def test_the_pinned_version_commit_and_apache_licence(chart):
    version, commit = VENDORED[chart]
    root = root_of(chart)
    assert root.name == version
    # NVIDIA's Chart.yaml spells its version without the tag's "v"; eks-charts' with it.
    assert yaml.safe_load((chart / "Chart.yaml").read_text())["version"] in (
        version,
        version.removeprefix("v"),
    )
    assert f"commit: {commit}\n" in (root / "PROVENANCE").read_text()
    licence = (root / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0" in licence


@pytest.mark.parametrize("chart", VENDORED, ids=lambda chart: chart.name)
def test_helm_lint_passes_with_our_values(chart, helm, clusters, tmp_path):
    values = (
        device_plugins.nvidia_values() if chart == NVIDIA_CHART else device_plugins.efa_values(clusters["p5"])
    )
    path = tmp_path / "values.json"
    path.write_text(json.dumps(values))
    assert "0 chart(s) failed" in helm.run("lint", str(chart), "--values", str(path))

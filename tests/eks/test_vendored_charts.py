"""The vendored Slinky charts are the tagged release's files, unchanged, with their licence."""

from __future__ import annotations

import hashlib

import yaml

from tests.eks.helm import CHARTS

ROOT = CHARTS.parent
CHART_NAMES = ("slurm-operator-crds", "slurm-operator", "slurm")


def provenance_hashes() -> dict[str, str]:
    lines = (ROOT / "PROVENANCE").read_text().splitlines()
    pairs = (line.split("  ", 1) for line in lines if line and not line.startswith("#") and "  " in line)
    return {path: digest for digest, path in pairs}


def test_every_vendored_file_matches_provenance():
    on_disk = {
        str(path.relative_to(ROOT)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in ROOT.rglob("*")
        if path.is_file() and path.name != "PROVENANCE"
    }
    assert on_disk == provenance_hashes()


def test_provenance_names_the_tag_and_commit():
    text = (ROOT / "PROVENANCE").read_text()
    assert "tag: v1.2.1\n" in text
    assert "commit: 87313dac23e95f5632439e99c9fe9e325ece1bcd\n" in text


def test_charts_are_apache_2_and_licence_is_vendored():
    assert "Apache License" in (ROOT / "LICENSE").read_text()
    assert "Version 2.0" in (ROOT / "LICENSE").read_text()
    for name in CHART_NAMES:
        chart = yaml.safe_load((CHARTS / name / "Chart.yaml").read_text())
        assert chart["annotations"]["license"] == "Apache-2.0", name
        assert chart["version"] == "1.2.1", name


def test_operator_supports_slurm_25_11():
    chart = yaml.safe_load((CHARTS / "slurm-operator" / "Chart.yaml").read_text())
    assert chart["annotations"]["slinky.slurm.net/minimum-slurm-version"] == "25.11"


def test_crds_are_slinky_v1beta1():
    crds = [
        yaml.safe_load(p.read_text()) for p in (CHARTS / "slurm-operator-crds" / "templates").glob("*.yaml")
    ]
    kinds = {crd["spec"]["names"]["kind"] for crd in crds}
    assert kinds == {"Accounting", "Controller", "LoginSet", "NodeSet", "RestApi", "Token"}
    for crd in crds:
        assert crd["spec"]["group"] == "slinky.slurm.net"
        assert [v["name"] for v in crd["spec"]["versions"] if v["served"]] == ["v1beta1"]

"""The tables `gpucluster synth` prints, per orchestrator: on EKS no node boots from our user
data, so there is no user-data table (no head, no login instances); the Kubernetes manifests
the synth wrote are listed instead. The EC2 path's tables stay as they were."""

from __future__ import annotations

from gpucluster.config.loader import load_config
from gpucluster.synth.app import synthesize
from gpucluster.synth.summary import cluster_summary
from tests.conftest import REPO


def summary(example: str, tmp_path):
    cfg = load_config(REPO / "examples" / f"{example}.yaml")
    result = synthesize(cfg, tmp_path / example)
    return {shown.title: shown for shown in cluster_summary(cfg, result)}, result


def test_eks_lists_its_manifests_and_no_user_data(tmp_path):
    tables, result = summary("p5-eks-slinky", tmp_path)
    manifests = f"Kubernetes manifests ({result.outdir / 'k8s'})"
    assert list(tables) == ["cluster p5eks: stacks", "compute groups", manifests]
    files = {row[0] for row in tables[manifests].rows}
    assert files == {"objects.yaml", "values/slurm-v1.2.1.yaml", "values/slurm-operator-v1.2.1.yaml"}
    cells = " ".join(cell for shown in tables.values() for row in shown.rows for cell in row)
    assert "head" not in cells and "login" not in cells


def test_ec2_keeps_the_user_data_table_of_every_role(tmp_path):
    tables, _ = summary("default", tmp_path)
    assert list(tables) == [
        "cluster demo: stacks",
        "compute groups",
        "user-data (budget 8192 bytes per role)",
    ]
    roles = [row[0] for row in tables["user-data (budget 8192 bytes per role)"].rows]
    assert roles == ["head", "login", "compute/gpu"]

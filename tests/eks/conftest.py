"""Clusters of each compute-group shape, their rendered manifests, and the real helm."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpucluster.config.loader import parse_config
from gpucluster.eks.manifests import render_manifests
from gpucluster.resolved import ResolvedCluster, resolve
from tests.conftest import EXAMPLES, REPO
from tests.eks.helm import Helm, extract_helm

# One compute group of each shape the Slinky values must get right: 32, 16 and 4 EFA
# interfaces, a g-family type with EFA, and one run without EFA.
SHAPES = {
    "p5": ("p5.48xlarge", True),
    "p5en": ("p5en.48xlarge", True),
    "p4d": ("p4d.24xlarge", True),
    "g6e": ("g6e.48xlarge", True),
    "g5-no-efa": ("g5.12xlarge", False),
}


def shape_cluster(instance_type: str, efa: bool) -> ResolvedCluster:
    """examples/default.yaml with its compute group on demand, of `instance_type`."""
    data = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    data["compute_groups"] = [
        {
            "name": "gpu",
            "instance_type": instance_type,
            "count": 2,
            "efa": efa,
            "capacity": {"type": "on-demand"},
        }
    ]
    return resolve(parse_config(yaml.safe_dump(data), f"default.yaml with {instance_type}"))


@pytest.fixture(scope="session")
def clusters() -> dict[str, ResolvedCluster]:
    shapes = {name: shape_cluster(*shape) for name, shape in SHAPES.items()}
    examples = {
        f"example-{path.stem}": resolve(parse_config(path.read_text(), str(path))) for path in EXAMPLES
    }
    return shapes | examples


@pytest.fixture(scope="session")
def manifest_dirs(tmp_path_factory, clusters) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("k8s")
    dirs = {}
    for name, cluster in clusters.items():
        for relative, text in render_manifests(cluster).items():
            path = root / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        dirs[name] = root / name
    return dirs


@pytest.fixture(scope="session")
def helm(tmp_path_factory) -> Helm:
    work = tmp_path_factory.mktemp("helm")
    return Helm(extract_helm(work), work)


@pytest.fixture(scope="session")
def rendered(helm, manifest_dirs) -> dict[str, list[dict]]:
    """Each cluster's `slurm` chart output with our values, plus the objects we write."""
    out = {}
    for name, folder in manifest_dirs.items():
        docs = helm.template("slurm", next((folder / "values").glob("slurm-v*.yaml")))
        docs += [doc for doc in yaml.safe_load_all((folder / "objects.yaml").read_text()) if doc]
        out[name] = docs
    return out

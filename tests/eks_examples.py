"""Each EKS example synthesized once per session, with cdk-nag, as `cdk deploy` would, and the
example with `accounting.database` once."""

from __future__ import annotations

import pytest
import yaml

from gpucluster.config.loader import load_config, parse_config
from gpucluster.resolved import resolve
from gpucluster.synth.app import SynthResult, synthesize
from tests.conftest import EKS_EXAMPLES, REPO

# The example the stack's detailed tests read.
EKS_EXAMPLE = "p5-eks-slinky"


@pytest.fixture(scope="session")
def eks_synthesized(tmp_path_factory) -> dict[str, SynthResult]:
    root = tmp_path_factory.mktemp("eks-out")
    return {path.stem: synthesize(load_config(path), root / path.stem, nag=True) for path in EKS_EXAMPLES}


@pytest.fixture(scope="session")
def eks_example_resolved():
    return resolve(load_config(REPO / "examples" / f"{EKS_EXAMPLE}.yaml"))


@pytest.fixture(scope="session")
def eks_template(eks_synthesized):
    """The example's `<name>-eks` template."""
    [template] = [t for name, t in eks_synthesized[EKS_EXAMPLE].templates.items() if name.endswith("-eks")]
    return template


def eks_example_data(change=lambda data: None) -> dict:
    """The example's YAML as data, changed by `change`."""
    data = yaml.safe_load((REPO / "examples" / f"{EKS_EXAMPLE}.yaml").read_text())
    change(data)
    return data


def with_database(data: dict) -> None:
    data["accounting"] = {"database": {"instance_class": "db.t4g.small", "storage_gib": 20}}


@pytest.fixture(scope="session")
def eks_database_synthesized(tmp_path_factory) -> SynthResult:
    """The example with `accounting.database`, synthesized once, with cdk-nag (it raises on a
    finding not acknowledged)."""
    cfg = parse_config(yaml.safe_dump(eks_example_data(with_database)), "c.yaml")
    return synthesize(cfg, tmp_path_factory.mktemp("eks-database-out"), nag=True)


@pytest.fixture(scope="session")
def eks_database_template(eks_database_synthesized):
    [template] = [t for name, t in eks_database_synthesized.templates.items() if name.endswith("-eks")]
    return template

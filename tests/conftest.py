"""Shared fixtures: every example is synthesized once per test session."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

# Capacity Blocks in the examples must not expire with the calendar: every test (and
# every subprocess it starts) judges them at this fixed time. Tests of expiry pass `now=`.
os.environ["GPUCLUSTER_NOW"] = "2026-12-01T00:00:00Z"

from gpucluster.synth.cdk_runtime import use_wheel_node

use_wheel_node()

from gpucluster.config import ClusterConfig  # noqa: E402
from gpucluster.config.loader import load_config  # noqa: E402
from gpucluster.synth.app import SynthResult, synthesize  # noqa: E402

# The AWS stand-ins, for the tests of every package that calls AWS (aws, ami, capacity,
# config edit, preflight, the AWS verbs' tables).
from tests.aws.stubs import aws as aws  # noqa: E402
from tests.aws.stubs import moto_aws as moto_aws  # noqa: E402

# pytester: the guard's own test (tests/test_long_tests.py) runs a pytest of its own.
pytest_plugins = ["pytester", "tests.long_tests", "tests.xdist_scheduling", "tests.eks_examples"]

REPO = Path(__file__).resolve().parent.parent


def _orchestrator(path: Path) -> str:
    return str(yaml.safe_load(path.read_text()).get("orchestrator", "ec2"))


# The EC2 examples: what most suites check (head node, user data, Slurm files) exists only
# there. The EKS examples have their own session fixture (tests/eks_examples.py).
ALL_EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
EXAMPLES = [path for path in ALL_EXAMPLES if _orchestrator(path) == "ec2"]
EKS_EXAMPLES = [path for path in ALL_EXAMPLES if _orchestrator(path) == "eks"]
EXAMPLE_NAMES = [path.stem for path in EXAMPLES]


@pytest.fixture(scope="session")
def example_configs() -> dict[str, ClusterConfig]:
    return {path.stem: load_config(path) for path in EXAMPLES}


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory, example_configs) -> dict[str, SynthResult]:
    """Each example's cloud assembly, synthesized exactly once per session, with cdk-nag
    (tests/synth/test_nag.py reads its reports), as `cdk deploy` synthesizes it."""
    root = tmp_path_factory.mktemp("cdk-out")
    return {name: synthesize(cfg, root / name, nag=True) for name, cfg in example_configs.items()}


def resources_of(template: dict, kind: str) -> dict[str, dict]:
    return {
        logical: resource
        for logical, resource in template.get("Resources", {}).items()
        if resource["Type"] == kind
    }


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())

"""Each EKS example synthesized once per session, with cdk-nag, as `cdk deploy` would."""

from __future__ import annotations

import pytest

from gpucluster.config.loader import load_config
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

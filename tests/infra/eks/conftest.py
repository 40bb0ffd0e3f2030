"""Each EKS example synthesized once per session, with cdk-nag, as `cdk deploy` would."""

from __future__ import annotations

import pytest

from gpucluster.config.loader import load_config
from gpucluster.synth.app import SynthResult, synthesize
from tests.conftest import EKS_EXAMPLES


@pytest.fixture(scope="session")
def eks_synthesized(tmp_path_factory) -> dict[str, SynthResult]:
    root = tmp_path_factory.mktemp("eks-out")
    return {path.stem: synthesize(load_config(path), root / path.stem, nag=True) for path in EKS_EXAMPLES}

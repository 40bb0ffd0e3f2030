"""Each example config, loaded fresh for the test that asks for `example`."""

from __future__ import annotations

import pytest

from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from tests.conftest import EXAMPLES


@pytest.fixture(params=EXAMPLES, ids=[path.stem for path in EXAMPLES])
def example(request) -> ClusterConfig:
    return load_config(request.param)

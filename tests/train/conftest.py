"""The trainer's tests. Those that need torch skip, saying why, only where torch is
absent; under CI (CI=true) its absence fails the run instead, since `make test`
installs the `train` extra and a silent skip would hide the trainer untested."""

from __future__ import annotations

import importlib.util
import os

import pytest

TORCH_MISSING = importlib.util.find_spec("torch") is None
NO_TORCH_REASON = (
    "torch is not installed (the `train` extra): "
    "pip install 'torch==2.13.0' -e '.[train]', or make setup-train"
)

needs_torch = pytest.mark.skipif(TORCH_MISSING, reason=NO_TORCH_REASON)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if TORCH_MISSING and os.environ.get("CI") == "true":
        raise pytest.UsageError(f"CI must run the trainer's tests, but {NO_TORCH_REASON}")


@pytest.fixture(autouse=True)
def _one_cpu_thread():
    """One intra-op thread, as in the subprocesses (OMP_NUM_THREADS=1): on a shared 2-core
    machine a second thread makes the tiny model several times slower, not faster, and an
    in-process reference and a subprocess compare bit for bit only with equal thread counts."""
    if TORCH_MISSING:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

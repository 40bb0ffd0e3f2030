"""The seam for your own model and data: one factory that returns a TrainTask.

The trainer owns distribution, precision, accumulation, the schedule, checkpoints
and requeue; a task owns only what is being learned:

    # my_project/task.py
    from pathlib import Path
    from gpucluster.train.task import TrainTask

    def build_task(data_dir: Path | None, seed: int) -> TrainTask:
        model = MyModel()                       # built on CPU; the trainer moves it
        dataset = MyDataset(data_dir)           # map-style: __len__ and __getitem__
        return TrainTask(model=model, dataset=dataset, loss=lambda m, batch: m(batch).loss)

    GPUCLUSTER_TRAIN_TASK=my_project.task:build_task torchrun ... -m gpucluster.train ...

The factory runs on every rank after torch is seeded with --seed, so every rank
builds the same initial weights. Unset, the tiny synthetic task below is used: it
runs anywhere in seconds and has dropout, so a resume that forgot an RNG state
would not reproduce the uninterrupted weights.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import torch
from torch.utils.data import Dataset, TensorDataset

from gpucluster.bad_input import BadInput

TASK_ENV = "GPUCLUSTER_TRAIN_TASK"
SYNTHETIC_FEATURES = 16
SYNTHETIC_HIDDEN = 64
SYNTHETIC_SAMPLES = 512


@dataclass(frozen=True)
class TrainTask:
    """What to learn. `loss(model, batch)` gets the (DDP-wrapped) model and one collated,
    device-placed batch, and returns the mean loss of that micro-batch."""

    model: torch.nn.Module
    dataset: Dataset[Any]
    loss: Callable[[torch.nn.Module, Any], torch.Tensor]
    # DataLoader workers per rank; 0 keeps loading in the training process.
    loader_workers: int = 0


class TaskFactory(Protocol):
    def __call__(self, data_dir: Path | None, seed: int) -> TrainTask: ...


def _mse(model: torch.nn.Module, batch: Any) -> torch.Tensor:
    inputs, targets = batch
    prediction: torch.Tensor = model(inputs)
    return torch.nn.functional.mse_loss(prediction.float(), targets)


def synthetic_task(data_dir: Path | None, seed: int) -> TrainTask:
    """A two-layer MLP regressing a fixed random linear map plus noise (data_dir unused)."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(SYNTHETIC_SAMPLES, SYNTHETIC_FEATURES, generator=generator)
    weights = torch.randn(SYNTHETIC_FEATURES, 1, generator=generator)
    targets = inputs @ weights + 0.05 * torch.randn(SYNTHETIC_SAMPLES, 1, generator=generator)
    model = torch.nn.Sequential(
        torch.nn.Linear(SYNTHETIC_FEATURES, SYNTHETIC_HIDDEN),
        torch.nn.GELU(),
        torch.nn.Dropout(p=0.1),
        torch.nn.Linear(SYNTHETIC_HIDDEN, 1),
    )
    return TrainTask(model=model, dataset=TensorDataset(inputs, targets), loss=_mse)


def load_factory(spec: str | None = None) -> TaskFactory:
    """The factory named by $GPUCLUSTER_TRAIN_TASK (`module:function`), or the synthetic one."""
    spec = os.environ.get(TASK_ENV) if spec is None else spec
    if not spec:
        return synthetic_task
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise BadInput(
            TASK_ENV, "value", f"{spec!r} is not module:function", "e.g. my_project.task:build_task"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise BadInput(
            TASK_ENV, module_name, f"cannot be imported ({exc})", "check PYTHONPATH on every node"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise BadInput(TASK_ENV, spec, f"{module_name} has no function {attribute}", "name the task factory")
    return cast(TaskFactory, factory)

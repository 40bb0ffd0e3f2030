"""The trainer's command line, checked before anything touches torch or the network.

`python -m gpucluster.train --checkpoint-dir DIR --steps N [--save-every K]
[--micro-batch B] [--accum A] [--lr LR] [--warmup W] [--seed S] [--data-dir DIR]`

The torchrun sbatch job launches exactly this interface, so every option keeps its
name. A bad value exits 2 with one `error (command line): --OPTION: what; fix` line
(gpucluster.bad_input), never a traceback on every rank.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gpucluster.bad_input import EXIT_BAD_INPUT, BadInput

SOURCE = "(command line)"
DEFAULT_SAVE_EVERY = 50
DEFAULT_MICRO_BATCH = 8
DEFAULT_ACCUM = 2
DEFAULT_LR = 1e-3
DEFAULT_SEED = 1234


class TrainSettings(BaseModel):
    """One training run. `steps` counts optimizer updates, not micro-batches."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    checkpoint_dir: Path
    steps: int = Field(ge=1)
    save_every: int = Field(default=DEFAULT_SAVE_EVERY, ge=1)
    micro_batch: int = Field(default=DEFAULT_MICRO_BATCH, ge=1)
    accum: int = Field(default=DEFAULT_ACCUM, ge=1)
    lr: float = Field(default=DEFAULT_LR, gt=0, allow_inf_nan=False)
    # None: 10% of the steps (0 for runs shorter than 10 steps).
    warmup: int | None = Field(default=None, ge=0)
    seed: int = Field(default=DEFAULT_SEED, ge=0)
    data_dir: Path | None = None

    @model_validator(mode="after")
    def _warmup_inside_run(self) -> TrainSettings:
        # The seed's bound: a warmup as long as the run would leave no cosine phase.
        if self.warmup is not None and self.warmup >= self.steps:
            raise ValueError("warmup_steps")
        return self

    @property
    def warmup_steps(self) -> int:
        return self.steps // 10 if self.warmup is None else self.warmup


_OPTION = {
    "checkpoint_dir": "--checkpoint-dir",
    "steps": "--steps",
    "save_every": "--save-every",
    "micro_batch": "--micro-batch",
    "accum": "--accum",
    "lr": "--lr",
    "warmup": "--warmup",
    "seed": "--seed",
    "data_dir": "--data-dir",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # The project's usage errors are one line, exit 2 (gpucluster.bad_input).
        print(f"usage error: {message} (see python -m gpucluster.train --help)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="python -m gpucluster.train",
        description="Reference DDP trainer: resumable checkpoints, requeue on SIGUSR1.",
    )
    p.add_argument(
        "--checkpoint-dir", required=True, type=Path, help="shared directory (FSx) for checkpoints"
    )
    p.add_argument("--steps", required=True, type=int, help="optimizer updates in the whole run")
    p.add_argument(
        "--save-every", type=int, default=DEFAULT_SAVE_EVERY, help="optimizer updates between saves"
    )
    p.add_argument(
        "--micro-batch", type=int, default=DEFAULT_MICRO_BATCH, help="samples per rank per micro-step"
    )
    p.add_argument("--accum", type=int, default=DEFAULT_ACCUM, help="micro-steps per optimizer update")
    p.add_argument("--lr", type=float, default=DEFAULT_LR, help="peak learning rate")
    p.add_argument("--warmup", type=int, default=None, help="warmup updates (default: 10%% of --steps)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="seed for weights, data order and dropout")
    p.add_argument("--data-dir", type=Path, default=None, help="passed to the task factory (your dataset)")
    return p


def _problem(error: ValidationError) -> BadInput:
    first = error.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "warmup"
    if first["msg"].endswith("warmup_steps"):
        return BadInput(SOURCE, "--warmup", "must be smaller than --steps", "shorten the warmup or add steps")
    option = _OPTION.get(field, field)
    return BadInput(SOURCE, option, first["msg"].lower(), f"pass a valid {option}")


def parse(argv: Sequence[str] | None = None) -> TrainSettings:
    """The settings, or BadInput naming the option that is wrong."""
    namespace = parser().parse_args(argv)
    try:
        return TrainSettings(**vars(namespace))
    except ValidationError as exc:
        raise _problem(exc) from None

"""Warmup then cosine decay, advanced once per optimizer update and never past its end.

Plain Python (no torch) so the bounds are tested without the train extra. The seed's
rules: 0 <= warmup < total, progress clamped so the cosine never rises again, and
one step() per optimizer update, not per micro-batch: with accumulation A, a
schedule stepped per micro-batch would end after 1/A of the run.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, MutableMapping
from typing import Any

DEFAULT_MIN_RATIO = 0.1


class ScheduleOverrun(RuntimeError):
    """step() after the last update: the loop ran longer than the schedule it was given."""


class WarmupCosine:
    """Learning rate for each optimizer update 0..total_steps-1.

    Update s uses base_lr * factor(s). Warmup rises linearly to base_lr and starts
    above zero ((s+1)/(warmup+1)), so no update is wasted at lr 0; the cosine then
    falls to min_ratio * base_lr at the last update.
    """

    def __init__(
        self, base_lr: float, warmup_steps: int, total_steps: int, min_ratio: float = DEFAULT_MIN_RATIO
    ) -> None:
        if not (math.isfinite(base_lr) and base_lr > 0):
            raise ValueError(f"base_lr must be a positive finite number, got {base_lr}")
        if not 0 <= warmup_steps < total_steps:
            raise ValueError(f"need 0 <= warmup_steps < total_steps, got {warmup_steps} and {total_steps}")
        if not 0.0 <= min_ratio <= 1.0:
            raise ValueError(f"min_ratio must lie in [0, 1], got {min_ratio}")
        self.base_lr = base_lr
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.min_ratio = min_ratio
        self.completed = 0

    def factor(self, step: int) -> float:
        if not 0 <= step < self.total_steps:
            raise ValueError(f"update {step} lies outside the schedule's 0..{self.total_steps - 1}")
        if step < self.warmup_steps:
            return (step + 1) / (self.warmup_steps + 1)
        cosine_steps = self.total_steps - 1 - self.warmup_steps
        progress = 1.0 if cosine_steps == 0 else min(1.0, (step - self.warmup_steps) / cosine_steps)
        return self.min_ratio + (1.0 - self.min_ratio) * (1.0 + math.cos(math.pi * progress)) / 2.0

    def lr(self) -> float:
        """The rate for the next update; ScheduleOverrun once every update is done."""
        if self.completed >= self.total_steps:
            raise ScheduleOverrun(f"all {self.total_steps} updates of the schedule are done")
        rate = self.base_lr * self.factor(self.completed)
        if rate < 0:  # unreachable with the bounds above; an lr below 0 would ascend the loss
            raise ValueError(f"negative learning rate {rate} at update {self.completed}")
        return rate

    def apply(self, param_groups: Iterable[MutableMapping[str, Any]]) -> float:
        """Set the next update's rate on an optimizer's param_groups; returns it."""
        rate = self.lr()
        for group in param_groups:
            group["lr"] = rate
        return rate

    def step(self) -> None:
        """Call once after each optimizer.step()."""
        if self.completed >= self.total_steps:
            raise ScheduleOverrun(f"step() past the schedule's end ({self.total_steps} updates)")
        self.completed += 1

    def state_dict(self) -> dict[str, float | int]:
        return {
            "base_lr": self.base_lr,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "min_ratio": self.min_ratio,
            "completed": self.completed,
        }

    def load_state_dict(self, state: MutableMapping[str, Any]) -> None:
        """Resume only the same schedule: a different length or warmup would change every rate."""
        for key in ("base_lr", "warmup_steps", "total_steps", "min_ratio"):
            if state[key] != getattr(self, key):
                raise ValueError(f"checkpoint schedule has {key}={state[key]}, this run {getattr(self, key)}")
        completed = int(state["completed"])
        if not 0 <= completed <= self.total_steps:
            raise ValueError(f"checkpoint schedule completed {completed} of {self.total_steps} updates")
        self.completed = completed

"""Micro-batches from a DistributedSampler, with a cursor a checkpoint can hold.

The cursor is (epoch, position): the sampler's epoch (which seeds its shuffle, the
same on every rank) and how many micro-batches of that epoch this rank has taken.
Every rank takes the same number (drop_last), so one cursor describes them all, and
a resumed run continues with exactly the samples the interrupted one would have used.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from gpucluster.bad_input import BadInput


class DataCursor:
    def __init__(
        self,
        dataset: Dataset[Any],
        *,
        rank: int,
        world_size: int,
        micro_batch: int,
        seed: int,
        workers: int = 0,
    ) -> None:
        self.dataset = dataset
        self.micro_batch = micro_batch
        self.seed = seed
        self.workers = workers
        # drop_last: ranks with unequal shares would disagree on when an epoch ends.
        self.sampler: DistributedSampler[Any] = DistributedSampler(
            dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=seed, drop_last=True
        )
        self.per_epoch = len(self.sampler) // micro_batch
        if self.per_epoch == 0:
            raise BadInput(
                "(command line)",
                "--micro-batch",
                f"{micro_batch} exceeds the {len(self.sampler)} samples each of {world_size} ranks gets",
                "lower --micro-batch or use a larger dataset",
            )
        self.epoch = 0
        self.position = 0
        self._batches: Iterator[Any] | None = None

    def _open(self) -> Iterator[Any]:
        self.sampler.set_epoch(self.epoch)
        indices = list(self.sampler)[self.position * self.micro_batch : self.per_epoch * self.micro_batch]
        # A plain index list as sampler: the loader yields exactly the remaining batches. Its own
        # generator: a loader draws a seed when iterated, and from torch's global RNG that draw
        # would shift dropout in a run resumed mid-epoch.
        generator = torch.Generator().manual_seed(self.seed + self.epoch)
        loader = DataLoader(
            self.dataset,
            batch_size=self.micro_batch,
            sampler=indices,
            num_workers=self.workers,
            generator=generator,
        )
        return iter(loader)

    def next_batch(self) -> Any:
        if self.position >= self.per_epoch:
            self.epoch, self.position, self._batches = self.epoch + 1, 0, None
        if self._batches is None:
            self._batches = self._open()
        batch = next(self._batches)
        self.position += 1
        return batch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position, "per_epoch": self.per_epoch}

    def load_state_dict(self, state: dict[str, int]) -> None:
        if state["per_epoch"] != self.per_epoch:
            raise ValueError(
                f"checkpoint's data cursor has {state['per_epoch']} micro-batches per epoch, this run "
                f"{self.per_epoch} (world size, --micro-batch or dataset changed)"
            )
        self.epoch, self.position, self._batches = state["epoch"], state["position"], None

"""The training loop: DDP, bf16 autocast on GPU, accumulation, schedule, saves, requeue.

One optimizer update = `accum` micro-batches of `micro_batch` samples on each rank,
so the global batch is micro_batch x accum x world_size (data parallel only). DDP
all-reduces gradients on the last micro-batch of an update only (no_sync before).
The schedule advances once per update; saves happen at update boundaries, where
model, optimizer, schedule, data cursor and RNG agree with each other.
"""

from __future__ import annotations

import io
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, cast

import torch
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import default_collate

from gpucluster.bad_input import BadInput
from gpucluster.train import checkpoint
from gpucluster.train.data import DataCursor
from gpucluster.train.distributed import DistContext
from gpucluster.train.schedule import WarmupCosine
from gpucluster.train.settings import TrainSettings
from gpucluster.train.signals import StopRequest
from gpucluster.train.state import capture_rng, restore_rng, weights_sha256
from gpucluster.train.task import TrainTask

WEIGHT_DECAY = 0.01
CLIP_NORM = 1.0
LOG_LINES = 10


@dataclass(frozen=True)
class RunResult:
    step: int
    weights_sha256: str
    # True: stopped on SIGUSR1 with a checkpoint, before the last update.
    requeue: bool
    resumed_from: int | None
    steps_run: int
    seconds: float
    peak_gpu_bytes: int | None


def log(ctx: DistContext, message: str) -> None:
    if ctx.is_main:
        print(f"gpucluster-train: {message}", file=sys.stderr, flush=True)


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, Mapping):
        return {key: _to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, Sequence) and not isinstance(batch, str):
        return type(batch)(_to_device(value, device) for value in batch)  # type: ignore[call-arg]
    return batch


class _Run:
    """The objects of one run on one rank, and how they become and come from a checkpoint."""

    def __init__(self, settings: TrainSettings, task: TrainTask, ctx: DistContext) -> None:
        self.settings, self.task, self.ctx = settings, task, ctx
        self.model = task.model.to(ctx.device)
        self.wrapped: torch.nn.Module = self.model
        if ctx.distributed:
            device_ids = [ctx.device.index] if ctx.device.type == "cuda" else None
            self.wrapped = DistributedDataParallel(self.model, device_ids=device_ids)
        self.schedule = WarmupCosine(settings.lr, settings.warmup_steps, settings.steps)
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(), lr=self.schedule.lr(), weight_decay=WEIGHT_DECAY
        )
        self.cursor = DataCursor(
            task.dataset,
            rank=ctx.rank,
            world_size=ctx.world_size,
            micro_batch=settings.micro_batch,
            seed=settings.seed,
            workers=task.loader_workers,
        )
        self.step = 0

    def autocast(self) -> AbstractContextManager[Any]:
        # bf16 keeps fp32's exponent range: no GradScaler, so the checkpoint's scaler is None.
        if self.ctx.device.type == "cuda":
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return nullcontext()

    def update(self) -> torch.Tensor:
        """One optimizer update over `accum` micro-batches; returns the summed loss (detached)."""
        self.optimizer.zero_grad(set_to_none=True)
        total = torch.zeros((), device=self.ctx.device)
        for micro in range(self.settings.accum):
            batch = _to_device(self.cursor.next_batch(), self.ctx.device)
            last = micro == self.settings.accum - 1
            sync: AbstractContextManager[Any] = nullcontext()
            if isinstance(self.wrapped, DistributedDataParallel) and not last:
                sync = self.wrapped.no_sync()
            with sync:
                with self.autocast():
                    loss = self.task.loss(self.wrapped, batch) / self.settings.accum
                torch.autograd.backward(loss)
            total += loss.detach().float()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), CLIP_NORM)
        self.schedule.apply(self.optimizer.param_groups)
        self.optimizer.step()
        self.schedule.step()
        self.step += 1
        return total

    def settle_buckets(self) -> None:
        """DDP regroups its gradient buckets after a process's first backward, and with three
        or more ranks the grouping changes the order an all-reduce adds in (float addition is
        not associative): a resumed run drifted from the uninterrupted one at world size 4.
        One forward and backward that updates nothing, in every run, fresh or resumed, puts
        every real update after the regrouping. Eval mode: it draws no dropout randomness."""
        if not isinstance(self.wrapped, DistributedDataParallel):
            return
        batch = _to_device(default_collate([self.task.dataset[0]]), self.ctx.device)
        self.wrapped.eval()
        try:
            with self.autocast():
                loss = self.task.loss(self.wrapped, batch)
            torch.autograd.backward(loss)
        finally:
            # torch 2.13 leaves Module.train untyped (eval is typed): the call is the same.
            cast(Any, self.wrapped).train()
        self.optimizer.zero_grad(set_to_none=True)

    def state(self, rng: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "step": self.step,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "schedule": self.schedule.state_dict(),
            "data": self.cursor.state_dict(),
            "rng": rng,
            "scaler": None,
        }

    def save(self) -> checkpoint.Manifest | None:
        """Collective: every rank's RNG goes to rank 0, which writes; all wait for its outcome."""
        # Serialized by torch.save before the gather: all_gather_object's own pickling of
        # tensors fails to unpickle them (UntypedStorage has no dtype) in torch 2.13.
        buffer = io.BytesIO()
        torch.save(capture_rng(self.ctx.device), buffer)
        blobs = self.ctx.gather_to_all(buffer.getvalue())
        outcome: tuple[checkpoint.Manifest | None, str | None] = (None, None)
        if self.ctx.is_main:
            rng = [torch.load(io.BytesIO(blob), weights_only=True) for blob in blobs]
            try:
                manifest = checkpoint.save(
                    self.settings.checkpoint_dir,
                    self.state(rng),
                    step=self.step,
                    total_steps=self.settings.steps,
                    world_size=self.ctx.world_size,
                    weights_sha256=weights_sha256(self.model),
                )
                outcome = (manifest, None)
            except (OSError, checkpoint.CheckpointError) as exc:
                outcome = (None, str(exc))
        manifest, error = self.ctx.from_main(outcome)
        if error is not None:
            raise checkpoint.CheckpointError(error)
        return cast(checkpoint.Manifest | None, manifest)

    def resume(self) -> int | None:
        """Load the newest verified checkpoint (chosen by rank 0, loaded by all); its step or None."""
        directory = self.settings.checkpoint_dir
        chosen = checkpoint.newest_verified(directory) if self.ctx.is_main else None
        manifest: checkpoint.Manifest | None = self.ctx.from_main(chosen)
        if manifest is None:
            return None
        source = directory / manifest.file
        try:
            state = checkpoint.load(directory, manifest)
        except OSError as exc:
            # Rank 0 verified it, so this rank sees another directory: node-local, not shared.
            raise BadInput(
                source,
                "(--checkpoint-dir)",
                f"rank {self.ctx.rank} cannot read it ({exc.strerror})",
                "put --checkpoint-dir on storage every node mounts (FSx)",
            ) from None
        try:
            self.schedule.load_state_dict(state["schedule"])
            self.cursor.load_state_dict(state["data"])
        except ValueError as exc:
            raise BadInput(
                source,
                "resume",
                str(exc),
                "resume with the same --steps, --lr, --warmup, --micro-batch and world size, "
                "or pass a new --checkpoint-dir",
            ) from None
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.step = int(state["step"])
        rng = state["rng"]
        if len(rng) == self.ctx.world_size:
            restore_rng(rng[self.ctx.rank], self.ctx.device)
        else:
            # Another world size: per-rank streams cannot map; a fresh stream per rank and step.
            log(
                self.ctx,
                f"checkpoint has RNG for {len(rng)} ranks, this run {self.ctx.world_size}: reseeding",
            )
            _seed(self.settings.seed + self.ctx.rank + self.settings.steps * self.step)
        return self.step


def _seed(value: int) -> None:
    random.seed(value)
    torch.manual_seed(value)


def train(
    settings: TrainSettings,
    factory: Callable[..., TrainTask],
    ctx: DistContext,
    on_update: Callable[[int], None] | None = None,
    stop: StopRequest | None = None,
) -> RunResult:
    """Run (or resume) to settings.steps updates, or until SIGUSR1; rank 0 writes checkpoints.

    `stop`: a StopRequest the caller entered early (before importing torch), so a signal
    during start-up is honoured too; without one, train() listens from its own start.
    """
    if stop is not None:
        return _train(settings, factory, ctx, on_update, stop)
    with StopRequest() as own:
        return _train(settings, factory, ctx, on_update, own)


def _train(
    settings: TrainSettings,
    factory: Callable[..., TrainTask],
    ctx: DistContext,
    on_update: Callable[[int], None] | None,
    stop: StopRequest,
) -> RunResult:
    # Deterministic kernels: a resumed run must reproduce the uninterrupted one bit for bit.
    torch.use_deterministic_algorithms(True)
    _seed(settings.seed)  # the same initial weights on every rank
    run = _Run(settings, factory(settings.data_dir, settings.seed), ctx)
    _seed(settings.seed + ctx.rank)  # dropout differs per rank
    resumed_from = run.resume()
    run.settle_buckets()
    log(
        ctx,
        f"{'resuming at update ' + str(resumed_from) if resumed_from is not None else 'starting'} "
        f"of {settings.steps}: world_size={ctx.world_size} device={ctx.device.type} "
        f"global_batch={settings.micro_batch * settings.accum * ctx.world_size}",
    )
    log_every = max(1, settings.steps // LOG_LINES)
    first, started = run.step, time.perf_counter()
    requeue = False
    while run.step < settings.steps:
        loss = run.update()
        if on_update is not None:
            on_update(run.step)
        requeue = ctx.any_rank(stop.requested) and run.step < settings.steps
        if requeue or run.step % settings.save_every == 0 or run.step == settings.steps:
            run.save()
        if run.step % log_every == 0:
            log(ctx, f"update={run.step}/{settings.steps} loss={loss.item():.6f}")
        if requeue:
            break
    if ctx.device.type == "cuda":
        torch.cuda.synchronize(ctx.device)
    seconds = time.perf_counter() - started
    peak = torch.cuda.max_memory_allocated(ctx.device) if ctx.device.type == "cuda" else None
    return RunResult(
        step=run.step,
        weights_sha256=weights_sha256(run.model),
        requeue=requeue,
        resumed_from=resumed_from,
        steps_run=run.step - first,
        seconds=seconds,
        peak_gpu_bytes=peak,
    )

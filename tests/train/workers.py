"""Rank bodies for the 2-process gloo test (spawned: importable, module-level)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path


def _signal_rank1_at_3(step: int) -> None:
    if step == 3 and os.environ["RANK"] == "1":
        os.kill(os.getpid(), signal.SIGUSR1)


def straight_interrupted_resumed(rank: int, port: int, root: str, steps: int, world_size: int) -> None:
    """On one gloo group: an uninterrupted run, one that rank 1 alone signals at update 3,
    and its resume; each rank writes what it saw to root/rank-N.json."""
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world_size),
            "MASTER_ADDR": "127.0.0.1",
        }
    )
    os.environ["MASTER_PORT"] = str(port)
    import torch

    from gpucluster.train import distributed
    from gpucluster.train.loop import train
    from gpucluster.train.settings import TrainSettings
    from gpucluster.train.task import synthetic_task

    torch.set_num_threads(1)
    ctx = distributed.setup()
    try:
        base = Path(root)
        straight = train(TrainSettings(checkpoint_dir=base / "a", steps=steps), synthetic_task, ctx)
        settings = TrainSettings(checkpoint_dir=base / "b", steps=steps)
        stopped = train(settings, synthetic_task, ctx, on_update=_signal_rank1_at_3)
        resumed = train(settings, synthetic_task, ctx)
    finally:
        distributed.teardown(ctx)
    report = {
        "world_size": ctx.world_size,
        "backend": "gloo",
        "straight": straight.weights_sha256,
        "stopped_step": stopped.step,
        "stopped_requeue": stopped.requeue,
        "resumed_from": resumed.resumed_from,
        "resumed": resumed.weights_sha256,
    }
    (base / f"rank-{rank}.json").write_text(json.dumps(report))

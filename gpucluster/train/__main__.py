"""`python -m gpucluster.train ...`: one process of a torchrun job, or a lone process.

Exit codes: 0 when training finished (rank 0 printed the `done` line) and also when
SIGUSR1 stopped it after a checkpoint (the log says `requeue`), 2 for bad input,
1 when a checkpoint could not be written or read back.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from gpucluster.bad_input import EXIT_BAD_INPUT, BadInput, report
from gpucluster.train.settings import TrainSettings, parse
from gpucluster.train.signals import StopRequest

DONE_PREFIX = "gpucluster-train done"


def _missing_torch() -> int:
    print(
        "error (environment): torch: not installed; install the trainer's extra with a pinned torch, "
        "e.g. pip install 'torch==2.13.0' && pip install -e '.[train]'",
        file=sys.stderr,
    )
    return EXIT_BAD_INPUT


def main(argv: Sequence[str] | None = None) -> int:
    try:
        settings = parse(argv)
    except BadInput as exc:
        return report(exc)
    # Listen before importing torch (seconds): SIGUSR1's default action would kill the process.
    with StopRequest() as stop:
        return _run(settings, stop)


def _run(settings: TrainSettings, stop: StopRequest) -> int:
    try:
        import torch  # noqa: F401
    except ImportError:
        return _missing_torch()
    # cuBLAS is deterministic only with a fixed workspace; must be set before its first use.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    from gpucluster.train import distributed
    from gpucluster.train.checkpoint import CheckpointError
    from gpucluster.train.loop import log, train
    from gpucluster.train.task import load_factory

    try:
        factory = load_factory()
        ctx = distributed.setup()
    except BadInput as exc:
        return report(exc)
    try:
        result = train(settings, factory, ctx, stop=stop)
        # Every rank done before any tears its connections down: on a loaded host, gloo
        # aborted a slower rank ("terminate called without an active exception") after all
        # had trained to the end. Not on the error paths, where a peer may never get here.
        ctx.barrier()
    except BadInput as exc:
        return report(exc)
    except CheckpointError as exc:
        print(f"error: {exc}; check free space and permissions of --checkpoint-dir", file=sys.stderr)
        return 1
    finally:
        distributed.teardown(ctx)
    rate = result.steps_run / result.seconds if result.seconds > 0 else 0.0
    peak = "" if result.peak_gpu_bytes is None else f" peak-gpu-mib={result.peak_gpu_bytes / 2**20:.1f}"
    log(ctx, f"ran {result.steps_run} updates in {result.seconds:.2f}s steps/s={rate:.1f}{peak}")
    if result.requeue:
        log(
            ctx,
            f"requeue step={result.step}: SIGUSR1 received, checkpoint saved in {settings.checkpoint_dir}; "
            "exiting 0 so Slurm's requeue resumes from it",
        )
    elif ctx.is_main:
        print(f"{DONE_PREFIX} step={result.step} weights-sha256={result.weights_sha256}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Two CPU ranks over gloo: DDP agrees, a signal on one rank stops both at the same
update, the resume matches the uninterrupted run, and torchrun's environment works."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.conftest import needs_torch

pytestmark = needs_torch

torch = pytest.importorskip("torch", reason="torch is not installed (the `train` extra)")

from gpucluster.train import checkpoint  # noqa: E402
from gpucluster.train.state import weights_sha256  # noqa: E402
from gpucluster.train.task import synthetic_task  # noqa: E402
from tests.train.workers import straight_interrupted_resumed  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STEPS = 8


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("world_size", [2, 4])
def test_gloo_ranks_stop_together_on_one_ranks_signal_and_resume_bit_identical(tmp_path, world_size):
    """Four ranks too: from three on, DDP's bucket regrouping after a process's first backward
    changed the all-reduce's order of addition, and the resume drifted (settle_buckets)."""
    torch.multiprocessing.spawn(
        straight_interrupted_resumed,
        args=(_free_port(), str(tmp_path), STEPS, world_size),
        nprocs=world_size,
        join=True,
    )
    reports = [json.loads((tmp_path / f"rank-{rank}.json").read_text()) for rank in range(world_size)]
    assert all(report == reports[0] for report in reports)  # replicas identical; all stopped at 3
    report = reports[0]
    assert (report["stopped_step"], report["stopped_requeue"], report["resumed_from"]) == (3, True, 3)
    assert report["resumed"] == report["straight"]
    manifest = checkpoint.newest_verified(tmp_path / "b")
    assert (manifest.step, manifest.world_size, manifest.weights_sha256) == (
        STEPS,
        world_size,
        report["straight"],
    )
    state = checkpoint.load(tmp_path / "b", manifest)
    assert len(state["rng"]) == world_size
    assert not torch.equal(state["rng"][0]["torch"], state["rng"][1]["torch"])


def test_torchrun_launches_two_ranks_and_rank_0_alone_prints_the_done_line(tmp_path):
    """The launcher's way: torchrun's environment (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_*)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    command += ["-m", "gpucluster.train", "--checkpoint-dir", str(tmp_path / "c"), "--steps", str(STEPS)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    done = [line for line in result.stdout.splitlines() if line.startswith("gpucluster-train")]
    assert len(done) == 1 and done[0].startswith(f"gpucluster-train done step={STEPS} weights-sha256=")
    # The digest is of the weights the checkpoint holds, recomputed here from the file.
    manifest = checkpoint.newest_verified(tmp_path / "c")
    assert (manifest.step, manifest.world_size) == (STEPS, 2)
    model = synthetic_task(None, 0).model
    model.load_state_dict(checkpoint.load(tmp_path / "c", manifest)["model"])
    assert done[0].endswith(f"weights-sha256={weights_sha256(model)}")
    assert "world_size=2 device=cpu global_batch=32" in result.stderr

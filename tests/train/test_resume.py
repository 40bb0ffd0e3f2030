"""Resume: a checkpoint restores everything, and an interrupted run ends bit-identical."""

from __future__ import annotations

import copy
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.train.conftest import needs_torch

pytestmark = needs_torch

torch = pytest.importorskip("torch", reason="torch is not installed (the `train` extra)")

from gpucluster.bad_input import BadInput  # noqa: E402
from gpucluster.train import checkpoint  # noqa: E402
from gpucluster.train.__main__ import main  # noqa: E402
from gpucluster.train.distributed import DistContext  # noqa: E402
from gpucluster.train.loop import _Run, train  # noqa: E402
from gpucluster.train.settings import TrainSettings  # noqa: E402
from gpucluster.train.task import synthetic_task  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SOLO = DistContext(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"), distributed=False)


def _settings(directory: Path, **overrides) -> TrainSettings:
    values = {"checkpoint_dir": directory, "steps": 12, "save_every": 100, "micro_batch": 8, "accum": 3}
    return TrainSettings(**{**values, **overrides})


def _same_tree(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_tree(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same_tree(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def test_resume_restores_model_optimizer_schedule_cursor_and_rng(tmp_path):
    settings = _settings(tmp_path, steps=40, micro_batch=64)
    torch.manual_seed(1)
    first = _Run(settings, synthetic_task(None, 1), SOLO)
    for _ in range(7):  # 21 micro-batches of 64 = 2 epochs of 512 samples and 5 batches into the third
        first.update()
    random.random()  # move python's stream too, as user code would
    expected = {
        "model": copy.deepcopy(first.model.state_dict()),
        "optimizer": copy.deepcopy(first.optimizer.state_dict()),
        "schedule": first.schedule.state_dict(),
        "cursor": first.cursor.state_dict(),
        "torch_rng": torch.get_rng_state(),
        "python_rng": random.getstate(),
    }
    first.save()

    torch.manual_seed(999)  # scramble everything global before resuming
    random.seed(999)
    # The same data (its own seeded generator), other initial weights (global RNG scrambled).
    second = _Run(settings, synthetic_task(None, 1), SOLO)
    assert not _same_tree(second.model.state_dict(), expected["model"])
    assert second.resume() == 7
    assert _same_tree(second.model.state_dict(), expected["model"])
    assert _same_tree(second.optimizer.state_dict(), expected["optimizer"])
    assert second.schedule.state_dict() == expected["schedule"]
    assert second.cursor.state_dict() == expected["cursor"] == {"epoch": 2, "position": 5, "per_epoch": 8}
    assert torch.equal(torch.get_rng_state(), expected["torch_rng"])
    assert random.getstate() == expected["python_rng"]

    # And the next update is the same bit for bit (data order, dropout, lr, Adam moments).
    second.update()
    torch.set_rng_state(expected["torch_rng"])
    first.update()
    assert _same_tree(second.model.state_dict(), first.model.state_dict())
    assert (
        second.cursor.state_dict() == first.cursor.state_dict() == {"epoch": 2, "position": 8, "per_epoch": 8}
    )


def _signal_at(update: int):
    def hook(step: int) -> None:
        if step == update:
            os.kill(os.getpid(), signal.SIGUSR1)

    return hook


def test_sigusr1_checkpoints_at_the_update_boundary_and_the_resumed_run_matches(tmp_path):
    straight = train(_settings(tmp_path / "straight"), synthetic_task, SOLO)
    assert (straight.step, straight.requeue, straight.resumed_from) == (12, False, None)

    stopped = train(_settings(tmp_path / "interrupted"), synthetic_task, SOLO, on_update=_signal_at(5))
    assert (stopped.step, stopped.requeue) == (5, True)
    assert checkpoint.newest_verified(tmp_path / "interrupted").step == 5
    assert stopped.weights_sha256 != straight.weights_sha256

    resumed = train(_settings(tmp_path / "interrupted"), synthetic_task, SOLO)
    assert (resumed.step, resumed.requeue, resumed.resumed_from, resumed.steps_run) == (12, False, 5, 7)
    assert resumed.weights_sha256 == straight.weights_sha256

    final = checkpoint.newest_verified(tmp_path / "interrupted")
    state = checkpoint.load(tmp_path / "interrupted", final)
    # Stepped once per update (12), not per micro-batch (36): accum=3 did not run the schedule out.
    assert final.step == 12 and state["schedule"]["completed"] == 12
    assert final.weights_sha256 == straight.weights_sha256


def test_a_finished_run_requeued_again_trains_nothing_and_reports_the_same_weights(tmp_path):
    done = train(_settings(tmp_path), synthetic_task, SOLO)
    again = train(_settings(tmp_path), synthetic_task, SOLO)
    assert (again.steps_run, again.step, again.weights_sha256) == (0, 12, done.weights_sha256)


def test_resuming_with_another_length_is_refused_naming_the_checkpoint(tmp_path, capsys):
    args = ["--checkpoint-dir", str(tmp_path), "--save-every", "2", "--micro-batch", "8"]
    assert main([*args, "--steps", "4"]) == 0
    assert main([*args, "--steps", "8"]) == 2
    err = capsys.readouterr().err
    assert f"error {tmp_path / 'step-00000004.pt'}: resume: checkpoint schedule has total_steps=4" in err
    assert "pass a new --checkpoint-dir" in err


def _train_cli(directory: Path, steps: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "gpucluster.train",
        "--checkpoint-dir",
        str(directory),
        "--steps",
        str(steps),
    ]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    return {**env, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}


def test_cli_sigusr1_exits_0_for_requeue_and_the_resumed_run_prints_the_uninterrupted_digest(tmp_path):
    steps = 300
    # The uninterrupted reference in this process (the same arithmetic as the CLI's, saves time).
    straight = train(TrainSettings(checkpoint_dir=tmp_path / "a", steps=steps), synthetic_task, SOLO)
    done = [f"gpucluster-train done step={steps} weights-sha256={straight.weights_sha256}"]

    process = subprocess.Popen(
        _train_cli(tmp_path / "b", steps),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    lines = []
    # "starting" comes after the handler is installed and before the first update; the
    # signal then lands ~1 s before the 400 updates would end.
    while not (line := process.stderr.readline()).startswith("gpucluster-train: starting") and line:
        lines.append(line)
    process.send_signal(signal.SIGUSR1)
    out, rest = process.communicate(timeout=120)
    err = "".join(lines) + line + rest
    assert process.returncode == 0, err
    assert "gpucluster-train done" not in out
    requeue = [line for line in err.splitlines() if "requeue step=" in line]
    assert len(requeue) == 1 and "SIGUSR1 received" in requeue[0], err

    resumed = subprocess.run(_train_cli(tmp_path / "b", steps), env=_env(), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming at update" in resumed.stderr
    assert resumed.stdout.splitlines() == done


def test_a_rank_that_cannot_read_the_chosen_checkpoint_names_the_shared_directory(tmp_path, monkeypatch):
    run = _Run(_settings(tmp_path), synthetic_task(None, 0), SOLO)
    train(_settings(tmp_path / "elsewhere"), synthetic_task, SOLO)
    # Rank 0 chose a checkpoint in its directory; this rank's directory (tmp_path) lacks it.
    chosen = checkpoint.newest_verified(tmp_path / "elsewhere")
    monkeypatch.setattr(checkpoint, "newest_verified", lambda directory: chosen)
    with pytest.raises(BadInput) as caught:
        run.resume()
    assert "rank 0 cannot read it" in str(caught.value) and "every node mounts" in str(caught.value)

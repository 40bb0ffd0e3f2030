"""The command line the torchrun job uses, and its refusals (exit 2, one line, no torch needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.train.__main__ import main
from gpucluster.train.settings import parse


def test_the_launchers_interface_parses_with_every_option(tmp_path):
    settings = parse(
        [
            "--checkpoint-dir", str(tmp_path), "--steps", "100", "--save-every", "7", "--micro-batch", "4",
            "--accum", "3", "--lr", "0.02", "--warmup", "5", "--seed", "9", "--data-dir", "/fsx/data",
        ]
    )  # fmt: skip
    assert (settings.steps, settings.save_every, settings.micro_batch, settings.accum) == (100, 7, 4, 3)
    assert (settings.lr, settings.warmup_steps, settings.seed) == (0.02, 5, 9)
    assert settings.checkpoint_dir == tmp_path and settings.data_dir == Path("/fsx/data")


def test_default_warmup_is_a_tenth_of_the_run_and_zero_for_short_runs(tmp_path):
    assert parse(["--checkpoint-dir", str(tmp_path), "--steps", "250"]).warmup_steps == 25
    assert parse(["--checkpoint-dir", str(tmp_path), "--steps", "9"]).warmup_steps == 0


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--steps", "0"], "error (command line): --steps: input should be greater than or equal to 1"),
        (["--steps", "10", "--warmup", "10"], "error (command line): --warmup: must be smaller than --steps"),
        (["--steps", "10", "--lr", "0"], "error (command line): --lr: input should be greater than 0"),
        (["--steps", "10", "--lr", "nan"], "error (command line): --lr:"),
        (["--steps", "10", "--accum", "0"], "error (command line): --accum:"),
        (["--steps", "10", "--save-every", "0"], "error (command line): --save-every:"),
        (["--steps", "10", "--micro-batch", "-2"], "error (command line): --micro-batch:"),
    ],
)
def test_bad_values_exit_2_naming_the_option(tmp_path, capsys, extra, expected):
    assert main(["--checkpoint-dir", str(tmp_path), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "argv", [["--steps", "5"], ["--checkpoint-dir", "x", "--steps", "five"], ["--bogus"]]
)
def test_usage_errors_exit_2_on_one_line(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("usage error: ") and len(err.splitlines()) == 1

"""README's sample outputs are what the code prints (tests/readme_samples.py finds and runs
them; `python -m tests.readme_samples` rewrites them after a change)."""

from __future__ import annotations

import difflib

import pytest

from tests.readme_samples import README, printed, samples

SAMPLES = samples(README.read_text())


def test_readme_shows_the_samples_users_read_about():
    shown = {sample.args[0] for sample in SAMPLES}
    assert {"plan", "gate"} <= shown, shown


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: sample.args[0])
def test_each_sample_is_what_the_command_prints(sample):
    now = printed(sample)
    diff = "\n".join(difflib.unified_diff(sample.shown, now, "README.md", sample.command, lineterm=""))
    assert now == sample.shown, (
        f"README.md line {sample.first}: the output of `{sample.command}` changed; "
        f"run `python -m tests.readme_samples` and review the diff:\n{diff}"
    )


def test_the_gate_explains_a_star_only_when_it_prints_one():
    from typer.testing import CliRunner

    from gpucluster.cli import app
    from tests.conftest import REPO

    nccl = REPO / "tests" / "fixtures" / "nccl"
    for log, starred in (("p5-2node-allreduce-mpirun-eksblueprints-pattern-readme.txt", True),
                         ("p4d-2node-allreduce-awsefaeks-readme.txt", False)):  # fmt: skip
        result = CliRunner().invoke(app, ["gate", "--instance-type", "p4d.24xlarge", str(nccl / log)])
        assert ("*" in result.stdout) == starred
        assert ("* derived from busbw/algbw or ranks per node" in result.stdout) == starred

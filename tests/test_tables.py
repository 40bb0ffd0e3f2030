"""Every verb's tables in both modes: piped into a file each row on one line, whole; on an
80-column terminal (TTY_COMPATIBLE=1, COLUMNS=80) fitted to it, nothing cut short.
The AWS verbs (preflight, capacity find/show/extend): tests/test_tables_aws.py."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.tables import print_table, table
from tests.conftest import REPO
from tests.diff.test_command import fake_synth
from tests.table_text import PIPED, TERMINAL, WIDTH, assert_fits_terminal, assert_piped_whole, plain

DEFAULT = REPO / "examples" / "default.yaml"
NCCL = REPO / "tests" / "fixtures" / "nccl"
__all__ = ["fake_synth"]  # the fixture: `gpucluster diff` with synth stubbed out


def both(*args: object) -> tuple[str, str]:
    """The verb's stdout piped, then on a terminal."""
    outputs = []
    for env in (PIPED, TERMINAL):
        result = CliRunner().invoke(app, list(map(str, args)), env=env)
        assert result.exit_code in (0, 1), result.output
        outputs.append(result.stdout)
    return outputs[0], outputs[1]


def printed(shown, *, terminal: bool, width: int = WIDTH) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=terminal, color_system=None)
    print_table(console, shown)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


# --- the helper ------------------------------------------------------------------------

ROWS = [("gpu", "p5.48xlarge", "capacity-block"), ("LustreFileSystem", "AWS::FSx::FileSystem", "x")]


def test_piped_a_table_is_as_wide_as_its_widest_row_whatever_the_console():
    text = printed(
        table("compute groups", ("group", "instance type", "capacity"), ROWS), terminal=False, width=20
    )
    for row in ROWS:
        assert any(all(value in line for value in row) for line in text.splitlines()), text
    assert "…" not in text


def test_on_a_terminal_cells_wrap_between_words_and_headers_first():
    rows = [("gpu", "sbatch --nodes=2 /opt/gpucluster/jobs/gpu/torchrun.sbatch", "16 x H100 on 2 nodes")]
    text = printed(
        table("plan", ("group", "submit this line on the login node", "GPUs"), rows), terminal=True
    )
    lines = text.splitlines()
    assert max(map(len, lines)) <= WIDTH
    assert any("/opt/gpucluster/jobs/gpu/torchrun.sbatch" in line for line in lines), text
    assert_fits_terminal(text, "", list(rows[0]))


def test_on_a_terminal_a_column_of_long_paths_folds_at_its_edge():
    path = "bundle/files/login/opt/gpucluster/jobs/" + "x" * 90 + "/nccl-pairwise.sbatch"
    text = printed(
        table("rendered into r", ("file", "bytes"), [(path, "1,234"), ("a.sh", "5")]), terminal=True
    )
    lines = text.splitlines()
    assert max(map(len, lines)) <= WIDTH and lines[1].startswith("┏"), text  # still a table
    assert_fits_terminal(text, "", [path, "1,234", "a.sh"])


def test_on_a_terminal_a_table_whose_words_cannot_fit_is_a_block_per_row():
    ids = (
        "ComputeGpuLaunchTemplate99AABBCC",
        "AWS::AutoScaling::AutoScalingGroup",
        "FsxLustreFileSystem3A1B2C3D",
    )
    rows = [("replaced", *ids, "[bold red]DATA AT RISK[/]"), ("added", "Asg", "AWS::X::Y", "", "")]
    shown = table(
        "demo-storage", ("change", "logical id", "type", "why / what", "data"), rows, show_lines=True
    )
    text = printed(shown, terminal=True)
    lines = text.splitlines()
    assert max(map(len, lines)) <= WIDTH
    assert lines[0] == "demo-storage" and lines[1] == "─" * WIDTH
    assert "logical id  ComputeGpuLaunchTemplate99AABBCC" in lines
    assert "data        DATA AT RISK" in lines  # markup rendered, not printed
    assert not [
        line for line in lines if line.startswith("why / what") and line.split() == ["why", "/", "what"]
    ]
    assert_fits_terminal(text, "", [*ids, "DATA AT RISK", "Asg"])


def test_force_color_in_a_ci_log_is_not_a_terminal(monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    console = Console(file=io.StringIO(), width=WIDTH)
    assert console.is_terminal  # rich's view
    wide = [("x" * 60, "y" * 60)]
    print_table(console, table("t", ("a", "b"), wide))
    assert isinstance(console.file, io.StringIO)
    assert any("x" * 60 in line and "y" * 60 in line for line in plain(console.file.getvalue()).splitlines())


# --- each verb -------------------------------------------------------------------------


def test_synth(tmp_path: Path):
    piped, terminal = both("synth", DEFAULT, "-o", tmp_path / "cdk.out")
    assert_piped_whole(piped, ["│ gpu   │ p5.48xlarge   │ capacity-block │"])
    assert_fits_terminal(terminal, piped)


def test_render(tmp_path: Path):
    piped, terminal = both("render", DEFAULT, "-o", tmp_path / "rendered")
    assert_piped_whole(piped, ["bundle/files/login/opt/gpucluster/jobs/gpu/nccl-pairwise.sbatch"])
    assert_fits_terminal(terminal, piped)


def test_plan():
    args = ("--tp", "8", "--pp", "1", "--dp", "2", "--micro-batch", "1", "--accum", "1")
    piped, terminal = both("plan", "--config", DEFAULT, *args)
    assert_piped_whole(piped, ["sbatch --nodes=2 /opt/gpucluster/jobs/gpu/torchrun.sbatch"])
    assert_fits_terminal(terminal, piped)


def test_diff(tmp_path: Path, fake_synth):
    from tests.diff_stacks import EXAMPLE, FSX, edited, lustre, stacks, write_cdk_out

    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.templates.update(edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1")))
    piped, terminal = both("diff", EXAMPLE, "--baseline", baseline)
    assert_piped_whole(piped, [FSX, "AWS::FSx::FileSystem", "DATA AT RISK"])
    assert_fits_terminal(terminal, piped)


def test_scan(tmp_path: Path):
    deep = tmp_path / "cdk.out" / "asset.0123456789abcdef0123456789abcdef" / "files" / "login" / "etc"
    deep.mkdir(parents=True)
    (deep / "credentials").write_text("[default]\naws_access_key_id = AKIA" + "IOSFODNN7EXAMPLE\n")
    piped, terminal = both("scan", tmp_path / "cdk.out")
    assert_piped_whole(piped, [str(deep / "credentials")])
    assert_fits_terminal(terminal, piped)


@pytest.mark.parametrize(
    "logs",
    [
        (
            "p5-2node-allreduce-mpirun-eksblueprints-pattern-readme.txt",
            "p4d-2node-allreduce-awsefaeks-readme.txt",
        ),
        ("p5en-16node-allreduce-topoaware-awsomedt-readme.txt",),
    ],
)
def test_gate(logs):
    piped, terminal = both("gate", "--instance-type", "p5.48xlarge", *(NCCL / log for log in logs))
    assert_piped_whole(piped, [f"{NCCL / logs[0]}:1"])
    assert_fits_terminal(terminal, piped)

"""Slow verbs show progress on a terminal's stderr and print nothing extra when piped.

`gate` on a large log, `scan` of a large tree and a cold `synth` take seconds; a user at a
terminal sees a bar or a spinner (erased when the work ends), a CI log sees the same
output as before. The pty stands in for the terminal (tests/terminal.py).
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EXAMPLES
from tests.nccl_logs import Spec, text_log
from tests.terminal import GPUCLUSTER, on_terminal, piped

ERASE_LINE = "\x1b[2K"


def test_gate_shows_its_parse_on_a_terminal_and_nothing_extra_when_piped(tmp_path: Path) -> None:
    log = tmp_path / "all_reduce.log"
    log.write_text(text_log(Spec()))
    args = [*GPUCLUSTER, "gate", str(log), "--instance-type", "p5.48xlarge"]
    terminal, pipe = on_terminal(args), piped(args)
    assert terminal.code == pipe.code == 0, terminal.stdout + terminal.stderr
    assert "gate: reading all_reduce.log" in terminal.stderr and "100%" in terminal.stderr
    # The bar is erased at the end: the screen keeps only what a log holds.
    assert ERASE_LINE in terminal.stderr
    assert pipe.stderr == ""
    assert terminal.stdout == pipe.stdout and pipe.stdout.splitlines()[-1] == "GO"


def test_scan_shows_the_files_it_reads_on_a_terminal_and_nothing_extra_when_piped(tmp_path: Path) -> None:
    for index in range(3):
        (tmp_path / f"part-{index}.sh").write_text("#!/bin/bash\necho ok\n" * 1000)
    args = [*GPUCLUSTER, "scan", str(tmp_path)]
    terminal, pipe = on_terminal(args), piped(args)
    assert terminal.code == pipe.code == 0, terminal.stdout + terminal.stderr
    assert "scan: 3 files" in terminal.stderr and "100%" in terminal.stderr
    assert pipe.stderr == ""
    assert terminal.stdout == pipe.stdout
    assert pipe.stdout.startswith("no key material or passwords in")


def test_synth_shows_a_spinner_on_a_terminal(tmp_path: Path) -> None:
    config = next(path for path in EXAMPLES if path.stem == "default")
    terminal = on_terminal([*GPUCLUSTER, "synth", str(config), "-o", str(tmp_path / "out")])
    assert terminal.code == 0, terminal.stdout + terminal.stderr
    assert f"synth: {config}" in terminal.stderr and ERASE_LINE in terminal.stderr
    assert "templates written to" in terminal.stdout


def test_progress_prints_nothing_when_stderr_is_piped() -> None:
    script = (
        "from gpucluster.progress import progress, working\n"
        "with working('synth: x'):\n    pass\n"
        "with progress('gate: reading x', 10) as meter:\n    meter.update(5, current='x')\n"
        "print('done')\n"
    )
    run = piped([GPUCLUSTER[0], "-c", script])
    assert (run.code, run.stdout, run.stderr) == (0, "done\n", "")
    terminal = on_terminal([GPUCLUSTER[0], "-c", script])
    assert "synth: x" in terminal.stderr and "gate: reading x" in terminal.stderr

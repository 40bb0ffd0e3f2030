"""A directory the verb may not write, a config it may not read, a disk that is full:
refused for real (file modes that bind even for root, a read-only or full tmpfs), and
reported before any work with the one line of its kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.nccl_logs import Spec, text_log
from tests.real_refusals import bound_by_file_modes, errors, gpucluster, on_tmpfs, run

DEFAULT = REPO / "examples" / "default.yaml"


def _verbs(out: Path, log: Path) -> dict[str, tuple[list[str], str]]:
    """Verb -> (arguments writing into `out`, the option that names it)."""
    return {
        "synth": (["synth", str(DEFAULT), "-o", str(out)], "--output"),
        "render": (["render", str(DEFAULT), "-o", str(out)], "--output"),
        "container render": (["container", "render", "--config", str(DEFAULT), "-o", str(out)], "--output"),
        "gate": (["gate", str(log), "--instance-type", "p5.48xlarge", "--report", str(out)], "--report"),
    }


@pytest.mark.parametrize("verb", ["synth", "render", "container render", "gate"])
def test_a_read_only_directory_is_refused_before_any_work(tmp_path: Path, verb: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    log = tmp_path / "a.log"
    log.write_text(text_log(Spec()))
    tmp_path.chmod(0o755)  # the child may still reach the log and the directory
    arguments, option = _verbs(out, log)[verb]
    result = run(bound_by_file_modes(gpucluster(*arguments)))
    assert result.returncode == 2, result.stderr
    assert errors(result.stderr) == [
        f"error gpucluster {verb}: {option}: {out} cannot be written (Permission denied); "
        f"pass a directory you can write to {option}"
    ]
    # Refused before the work: no synth summary, no rendered table, no GO / NO-GO.
    assert result.stdout == ""
    assert list(out.iterdir()) == []


def test_a_read_only_file_system_is_the_same_refusal(tmp_path: Path) -> None:
    out = tmp_path / "mnt"
    out.mkdir()
    result = run(on_tmpfs(out, "ro", gpucluster("synth", DEFAULT, "-o", out)))
    assert result.returncode == 2, result.stderr
    assert errors(result.stderr) == [
        f"error gpucluster synth: --output: {out} cannot be written (Read-only file system); "
        "pass a directory you can write to --output"
    ]


@pytest.mark.parametrize("verb", ["synth", "render"])
def test_a_full_disk_is_a_problem_of_the_machine_naming_the_directory(tmp_path: Path, verb: str) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    out = mount / "out"
    result = run(on_tmpfs(mount, "size=64k", gpucluster(verb, DEFAULT, "-o", out)))
    assert result.returncode == 1, result.stderr
    (line,) = errors(result.stderr)
    assert line.startswith(f"error {out}"), line
    assert "cannot be written (" in line and "o space left on device)" in line, line
    assert line.endswith("; free space on that disk, or point --output at a directory on another one")


def test_an_unreadable_config_is_bad_input_of_that_file(tmp_path: Path) -> None:
    config = tmp_path / "cluster.yaml"
    config.write_text(DEFAULT.read_text())
    config.chmod(0o000)
    tmp_path.chmod(0o755)
    result = run(bound_by_file_modes(gpucluster("validate", config)))
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"error {config}: (file): cannot be read (Permission denied); "
        "make it readable to you (chmod u+r), or pass a copy"
    ]

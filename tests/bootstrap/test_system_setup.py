"""`make system` (.ci/system), which `make test` and CI's `.ci/run` run first: quiet when
the machine is set up, one line naming the command to run when it cannot set up, and a
failure instead of that line in CI."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.shellcheck import assert_shellcheck_clean

REPO = Path(__file__).resolve().parents[2]
SYSTEM = REPO / ".ci" / "system"


def _system(tmp_path: Path, *, uid: int, ci: bool) -> subprocess.CompletedProcess:
    """.ci/system with `id -u` answering `uid` (a stand-in first on PATH)."""
    stubs = tmp_path / "stubs"
    stubs.mkdir(exist_ok=True)
    (stubs / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (stubs / "id").chmod(0o755)
    env = {"PATH": f"{stubs}:{os.environ['PATH']}"}
    if ci:
        env["CI"] = "true"
    return subprocess.run([str(SYSTEM)], capture_output=True, text=True, env=env, check=False)


def test_the_ci_scripts_pass_shellcheck(tmp_path):
    files = {f".ci/{name}": (REPO / ".ci" / name).read_text() for name in ("system", "run")}
    assert_shellcheck_clean(files, tmp_path)


def test_without_root_it_names_the_command_and_lets_the_tests_skip(tmp_path):
    done = _system(tmp_path, uid=1000, ci=False)
    assert done.returncode == 0
    assert done.stdout == ""
    assert done.stderr == "system: set-up skipped (not root): run 'sudo make system' once, then 'make test'\n"


def test_in_ci_a_machine_it_cannot_set_up_fails(tmp_path):
    done = _system(tmp_path, uid=1000, ci=True)
    assert done.returncode == 1
    assert "run 'sudo make system'" in done.stderr


def test_a_set_up_machine_is_left_alone_quietly():
    """Run after `make system` (as `make test` and CI do): nothing to install or build."""
    if os.geteuid() != 0:
        pytest.skip("checks the set-up itself, which needs root")
    missing = subprocess.run([str(SYSTEM), "missing"], capture_output=True, text=True, check=True).stdout
    if missing:
        # Not run through `make test`: this test must not be what sets the machine up.
        pytest.skip("the machine is not set up yet: run 'sudo make system'")
    done = subprocess.run([str(SYSTEM)], capture_output=True, text=True, check=False, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")

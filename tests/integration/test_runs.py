"""What a run ends of an interrupted one: exactly the processes that name a dead run's
root, and that root's files; never a live run's, a kept run's, or anything else."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.host import wait_for
from tests.integration.runs import KEPT, MARKER, claim, end_interrupted_runs, keep, marked, suite_processes


@pytest.fixture
def runs_dir(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen]]:
    processes: list[subprocess.Popen] = []
    yield processes
    for process in processes:
        process.kill()
        process.wait(timeout=10)


def _root(runs_dir: Path, name: str) -> Path:
    root = runs_dir / f"gcs-{name}"
    (root / "log").mkdir(parents=True)
    return root


def _sleep(started: list[subprocess.Popen], *args: str, env: dict[str, str]) -> subprocess.Popen:
    """A process that waits, with `args` on its command line as a daemon has its paths."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *args], env=env)
    started.append(process)
    return process


def _name(process: subprocess.Popen) -> str:
    return Path(f"/proc/{process.pid}/comm").read_text().strip()


def _alive(process: subprocess.Popen) -> bool:
    return process.poll() is None


def test_the_processes_and_files_of_a_dead_run_are_ended_and_nothing_else(runs_dir, started):
    dead = _root(runs_dir, "dead")
    (dead / OWNER_OF_A_GONE_PROCESS[0]).write_text(OWNER_OF_A_GONE_PROCESS[1])
    current = _root(runs_dir, "current")
    claim(current)
    kept = _root(runs_dir, "kept")
    keep(kept)
    path = {"PATH": os.environ["PATH"]}
    by_marker = _sleep(started, env=marked(dead, path))
    by_argument = _sleep(started, f"--pid-file={dead}/run/x.pid", env=path)
    ours = _sleep(started, env=marked(current, path))
    unrelated = _sleep(started, f"--key-file=/var{runs_dir}/gcs-dead/munge.key", env=path)
    wait_for("the processes to exec", lambda: len(suite_processes(runs_dir)) == 3, timeout=10)
    name = _name(ours)
    reclaimed = end_interrupted_runs(current, runs_dir)

    wait_for("the dead run's processes to exit", lambda: not (_alive(by_marker) or _alive(by_argument)), 10)
    assert _alive(ours) and _alive(unrelated)
    assert reclaimed.roots == [dead] and not dead.exists()
    assert current.exists() and (kept / KEPT).exists()
    assert reclaimed.processes == {name: 2}
    assert reclaimed.line() == (
        f"real-Slurm suite: ended what an interrupted run left: runs {dead}; 2 processes ({name} x2)"
    )


def test_a_run_whose_owner_lives_is_not_a_leftover(runs_dir, started):
    live = _root(runs_dir, "live")
    claim(live)  # this very pytest process: a run that started the current one as a test
    current = _root(runs_dir, "current")
    process = _sleep(started, env=marked(live, {"PATH": os.environ["PATH"]}))
    wait_for("the process to exec", lambda: suite_processes(runs_dir), timeout=10)

    reclaimed = end_interrupted_runs(current, runs_dir)

    assert not reclaimed and _alive(process) and live.exists()


def test_a_root_with_no_owner_is_an_interrupted_run(runs_dir):
    """An older harness wrote no owner, and a run killed between mkdtemp and `claim` has none."""
    orphan = _root(runs_dir, "orphan")
    assert end_interrupted_runs(_root(runs_dir, "current"), runs_dir).roots == [orphan]


def test_the_marker_names_the_root():
    assert marked(Path("/tmp/gcs-x"), {"PATH": "/bin"}) == {"PATH": "/bin", MARKER: "/tmp/gcs-x"}


# pid 1's start time is never "0": an owner file naming it is a process that is gone.
OWNER_OF_A_GONE_PROCESS = ("owner", "1 0\n")

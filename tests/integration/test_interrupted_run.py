"""A real-Slurm run killed mid-suite (pytest SIGKILLed by a time limit: no teardown runs)
leaves daemons behind; the next run ends them and works. A munged on the system socket
that no run started, with a key no run knows, is left alone and never used.

The next run is this session's own: the test runs first among the real-Slurm tests
(conftest.py orders it) and then starts the session cluster that the rest of the suite
uses, with the foreign munged answering on the system socket until the session ends."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.conftest import LOCK_HOLDER, REPO
from tests.integration.daemons import DEFAULT_SOCKET_DIR, SOCKET_NAME
from tests.integration.host import HarnessError, kill_pid, run, wait_for
from tests.integration.installs import SlurmInstall
from tests.integration.interrupted_probe import READY
from tests.integration.network import leftovers
from tests.integration.runs import suite_processes

pytestmark = pytest.mark.slurm

PROBE = Path(__file__).with_name("interrupted_probe.py")
SYSTEM_SOCKET = DEFAULT_SOCKET_DIR / SOCKET_NAME
# The run to be interrupted starts a cluster with accounting (MariaDB's first start) on
# two loaded cores.
START_TIMEOUT = 300
# What a run starts and the next must end (a job's own processes may exit on their own).
DAEMONS = ("munged", "slurmctld", "slurmd", "sackd", "dnsmasq", "mariadbd", "slurmdbd")


def _answers(socket: Path) -> bool:
    encode = run("munge", "-n", "-S", str(socket), check=False)
    return encode.returncode == 0


@pytest.fixture(scope="session")
def foreign_munged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """A munged on the system socket with a key of its own, as a machine's munge service
    or an older harness's leftover runs: the suite must neither use nor stop it. None when
    the system socket already answers (that munged is foreign already)."""
    if SYSTEM_SOCKET.exists() and _answers(SYSTEM_SOCKET):
        yield None
        return
    made_dir = not DEFAULT_SOCKET_DIR.exists()
    DEFAULT_SOCKET_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    home = tmp_path_factory.mktemp("foreign-munge")
    key = home / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    run(
        "munged",
        f"--key-file={key}",
        f"--socket={SYSTEM_SOCKET}",
        f"--pid-file={home / 'munged.pid'}",
        f"--log-file={home / 'munged.log'}",
        f"--seed-file={home / 'munged.seed'}",
    )
    wait_for("the foreign munged to answer", lambda: _answers(SYSTEM_SOCKET), timeout=10)
    pid = int((home / "munged.pid").read_text())
    try:
        yield home
        assert Path(f"/proc/{pid}").exists(), "the suite stopped a munged it did not start"
    finally:
        kill_pid(pid)
        wait_for("the foreign munged to exit", lambda: not Path(f"/proc/{pid}").exists(), timeout=10)
        for leftover in (SYSTEM_SOCKET, SYSTEM_SOCKET.with_name(f"{SOCKET_NAME}.lock")):
            leftover.unlink(missing_ok=True)
        if made_dir:
            with contextlib.suppress(OSError):
                DEFAULT_SOCKET_DIR.rmdir()


def _interrupted_run(tmp_path: Path) -> Path:
    """Start a run of the probe, let it get a job running, SIGKILL its pytest; returns the
    run's root."""
    ready = tmp_path / "ready"
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    env.update({LOCK_HOLDER: str(os.getpid()), READY: str(ready)})
    log_path = tmp_path / "interrupted-run.log"
    with log_path.open("wb") as log:
        probe = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(PROBE)],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for(
            "the run to be interrupted to get its job running",
            lambda: ready.exists() or probe.poll() is not None,
            timeout=START_TIMEOUT,
        )
    finally:
        probe.kill()
        probe.wait(timeout=30)
    if not ready.exists():
        raise HarnessError(f"the run to be interrupted ended first:\n{log_path.read_text()[-4000:]}")
    return Path(ready.read_text())


def _processes_of(root: Path) -> list[str]:
    return sorted(process.name for process in suite_processes() if str(root) in process.roots)


@pytest.mark.long("starts a whole cluster with accounting twice: the run it kills, then the session's")
def test_a_run_killed_mid_suite_is_cleaned_up_by_the_next(
    request: pytest.FixtureRequest,
    slurm_install: SlurmInstall,
    foreign_munged: Path | None,
    tmp_path: Path,
):
    assert not leftovers(), "this test runs before the session cluster (conftest.py orders it first)"
    interrupted = _interrupted_run(tmp_path)
    left = _processes_of(interrupted)
    for daemon in DAEMONS:
        assert daemon in left, f"the interrupted run left no {daemon}: {left}"
    assert leftovers(), "the interrupted run left its network"

    cluster = request.getfixturevalue("slurm_cluster")
    login = request.getfixturevalue("slurm_login")

    reclaimed = cluster.reclaimed
    assert reclaimed is not None and interrupted in reclaimed.roots
    assert all(reclaimed.processes[daemon] for daemon in DAEMONS), reclaimed.processes
    assert "bridge gcslurm0" in reclaimed.names
    assert str(interrupted) in reclaimed.line() and "munged x" in reclaimed.line()
    assert not interrupted.exists()
    assert _processes_of(interrupted) == []

    step = login.run(
        "srun", f"--chdir={cluster.root / 'jobs'}", "--nodes=2", "--ntasks-per-node=1", "hostname"
    )
    assert sorted(step.stdout.split()) == sorted(cluster.nodes)
    if foreign_munged is not None:
        assert _answers(SYSTEM_SOCKET), "the foreign munged still answers on the system socket"

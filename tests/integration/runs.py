"""One real-Slurm run's claim on this machine, and what an interrupted run left behind.

A run lives in one directory, `/tmp/gcs-*` (its root). The pytest process that owns it
writes its pid and start time there (`OWNER`), and every daemon the harness starts names
the root: in its environment (`MARKER`, see `marked`) or on its command line (munged's key,
dnsmasq's pid file, mariadbd's data directory). A run killed before its teardown (pytest
SIGKILLed by a time limit) leaves those daemons running; the next run, holding the
machine lock, ends every process that names a root whose owner is gone, deletes that
root, and reclaims the suite's network names, the /run/slurm/conf link and the node
cgroups. A process that names no such root (a munged of the system, another program's
dnsmasq) is never touched.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.host import HarnessError, wait_for

RUNS_DIR = Path("/tmp")
ROOT_PREFIX = "gcs-"
MARKER = "GPUCLUSTER_SUITE_RUN"
OWNER = "owner"
# Written instead of deleting the root when GPUCLUSTER_KEEP_SLURM_TEST=1: a kept run ended
# cleanly and its files stay for the developer who asked for them.
KEPT = "kept"


def marked(root: Path, env: dict[str, str]) -> dict[str, str]:
    """`env` with the marker naming `root`: for every daemon the run starts."""
    return {**env, MARKER: str(root)}


def claim(root: Path) -> None:
    """Record this process as the owner of the run in `root`."""
    (root / OWNER).write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")


def keep(root: Path) -> None:
    """The run in `root` ended cleanly and its files stay: not a leftover."""
    (root / OWNER).unlink(missing_ok=True)
    (root / KEPT).write_text("kept by GPUCLUSTER_KEEP_SLURM_TEST=1\n")


@dataclass
class Reclaimed:
    """What one run's start found of earlier runs and ended."""

    roots: list[Path] = field(default_factory=list)
    processes: Counter[str] = field(default_factory=Counter)
    # Everything else the run owned by name: network namespaces, the bridge, links, cgroups.
    names: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.roots or self.processes or self.names)

    def line(self) -> str:
        processes = ", ".join(f"{name} x{count}" for name, count in sorted(self.processes.items()))
        parts = [
            f"runs {', '.join(map(str, self.roots))}" if self.roots else "",
            f"{sum(self.processes.values())} processes ({processes})" if self.processes else "",
            ", ".join(self.names),
        ]
        return "real-Slurm suite: ended what an interrupted run left: " + "; ".join(p for p in parts if p)


def end_interrupted_runs(current: Path, runs_dir: Path = RUNS_DIR) -> Reclaimed:
    """End the processes of every run but `current` whose owner is gone, and delete their
    roots (kept ones stay). Call it holding the machine lock: no other live run can then
    be starting or running, except this process's own ancestors (a run that started this
    one as a test), whose roots stay alive with their owners."""
    reclaimed = Reclaimed()
    spared = _ancestors()
    dead: dict[str, bool] = {}

    def is_dead(root: str) -> bool:
        if root not in dead:
            dead[root] = Path(root) != current and not _owner_alive(Path(root))
        return dead[root]

    victims = {
        process.pid: process.name
        for process in suite_processes(runs_dir)
        if process.pid not in spared and any(is_dead(root) for root in process.roots)
    }
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_for(
        "the processes of an interrupted run to exit",
        lambda: not any(_running(pid) for pid in victims),
        timeout=15,
    )
    reclaimed.processes.update(victims.values())
    for root in sorted(runs_dir.glob(f"{ROOT_PREFIX}*")):
        if root.is_dir() and not (root / KEPT).exists() and is_dead(str(root)):
            _unmount_under(root)
            shutil.rmtree(root)
            reclaimed.roots.append(root)
    return reclaimed


@dataclass(frozen=True)
class SuiteProcess:
    pid: int
    name: str
    roots: frozenset[str]  # the run roots it names


def suite_processes(runs_dir: Path = RUNS_DIR) -> list[SuiteProcess]:
    """Every process that names a run root in `runs_dir`, in its marker or on its command line."""
    # Not inside a longer path: /var/tmp/gcs-x names no run in /tmp.
    pattern = re.compile(rf"(?<![\w/.-]){re.escape(str(runs_dir))}/{re.escape(ROOT_PREFIX)}[A-Za-z0-9_]+")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue  # exited while we looked, or a kernel thread
        roots = set(pattern.findall(cmdline.decode(errors="replace")))
        marker = f"{MARKER}=".encode()
        for variable in environ.split(b"\0"):
            if variable.startswith(marker):
                roots.update(pattern.findall(variable.decode(errors="replace")))
        if roots:
            found.append(SuiteProcess(int(entry.name), name, frozenset(roots)))
    return found


def _owner_alive(root: Path) -> bool:
    try:
        pid, started = (root / OWNER).read_text().split()
    except (OSError, ValueError):
        return False  # no owner: an older harness's run, or one killed while starting
    return _start_time(int(pid)) == started


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks (/proc/<pid>/stat field 22): with the pid, it
    names one process, whatever reuses the pid later."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _running(pid: int) -> bool:
    """Alive and not a zombie: a container's init may never reap what we killed."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _ancestors() -> set[int]:
    pids = set()
    pid = os.getpid()
    while pid > 1:
        pids.add(pid)
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
    return pids


def _unmount_under(root: Path) -> None:
    """A mount this host still has inside a dead run's root (rmtree would empty its source)."""
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for target in sorted((m for m in mounts if Path(m).is_relative_to(root)), key=len, reverse=True):
        result = subprocess.run(["umount", "--lazy", target], capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise HarnessError(f"an interrupted run's mount {target} stays: {result.stderr.strip()}")

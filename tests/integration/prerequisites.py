"""What this machine must have to run the real-Slurm suite, the Slurm release it runs,
and the process tracking a hand-started slurmd can use here."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpucluster.slurm.conf import SlurmSite
from tests.integration.host import run
from tests.integration.network import NETNS_PREFIX


def unavailable(what: str, reason: str) -> None:
    """A missing prerequisite fails under CI=true and skips elsewhere, naming the fix."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"cannot {what} in CI: {reason}", pytrace=False)
    pytest.skip(f"cannot {what}: {reason}")


def missing_prerequisites() -> str | None:
    """Why this machine cannot run the suite, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, slurmd, munged)"
    # Slurm itself comes from an install (installs.py); these run on the host for all of them.
    for tool, package in (
        ("munged", "munge"),
        ("munge", "munge"),
        ("ip", "iproute2"),
        ("nsenter", "util-linux"),
    ):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package})"
    probe = f"{NETNS_PREFIX}probe"
    result = run("ip", "netns", "add", probe, check=False)
    if result.returncode != 0:
        return f"cannot create network namespaces: {result.stderr.strip()}"
    run("ip", "netns", "del", probe, check=False)
    return None


@dataclass(frozen=True)
class ProcessTracking:
    proctrack_type: str
    task_plugin: str
    why: str | None  # None: production's cgroup plugins


def process_tracking(mounts: str | None = None) -> ProcessTracking:
    """Production's cgroup plugins, unless this host cannot run them for a hand-started slurmd.

    On a cgroup v2-only host, Slurm 22.05's cgroup/v2 plugin asks systemd over D-Bus for a
    scope to hold slurmstepd; without a system bus slurmd stops with
    "cgroup_dbus_attach_to_scope: cannot connect to dbus system daemon". Only then does the
    suite track processes by /proc and bind no tasks. cgroup v1 and hybrid hosts, and v2
    hosts with systemd, run production's plugins.
    """
    table = mounts if mounts is not None else Path("/proc/mounts").read_text()
    unified = any(
        fields[1] == "/sys/fs/cgroup" and fields[2] == "cgroup2"
        for fields in (line.split() for line in table.splitlines())
        if len(fields) > 2
    )
    site = SlurmSite()
    if unified and not Path("/run/dbus/system_bus_socket").exists():
        return ProcessTracking(
            "proctrack/linuxproc",
            "task/none",
            "cgroup v2 without a systemd D-Bus: Slurm 22.05 cannot make its slurmstepd scope",
        )
    return ProcessTracking(site.proctrack_type, site.task_plugin, None)

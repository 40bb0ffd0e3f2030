"""slurmctld on the head starts only while it holds a lock in StateSaveLocation (on EFS),
so a replacement head never runs a second controller on the same state."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap.cluster_conf import (
    SLURMCTLD_LOCK_BUSY_EXIT,
    SLURMCTLD_LOCK_WAIT_SECONDS,
    SLURMCTLD_START_TIMEOUT_SECONDS,
)
from tests.bootstrap_runs import example
from tests.shell_harness import Node

DROPIN = "etc/systemd/system/slurmctld.service.d/gpucluster.conf"


def _exec_start(node: Node) -> str:
    lines = (node.root / DROPIN).read_text().splitlines()
    return [line for line in lines if line.startswith("ExecStart=/")][0].removeprefix("ExecStart=")


def test_slurmctld_runs_under_a_lock_in_the_state_directory(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), gpus=0, efa=0, nvme_mounted=False)
    run = node.run("head")
    assert run.returncode == 0, run.output
    command = _exec_start(node)
    assert command == (
        f"/usr/bin/flock --wait {SLURMCTLD_LOCK_WAIT_SECONDS} --conflict-exit-code "
        f"{SLURMCTLD_LOCK_BUSY_EXIT} /home/.slurm/state/slurmctld.lock /usr/sbin/slurmctld -D "
        "$SLURMCTLD_OPTIONS"
    )
    dropin = (node.root / DROPIN).read_text()
    assert "Type=simple" in dropin and "ExecReload=/usr/bin/scontrol reconfigure" in dropin
    # The drop-in is installed before slurmctld starts, so the first start is already locked.
    assert run.index("systemctl start slurmctld") > 0
    again = node.run("head")
    assert again.returncode == 0 and again.called("systemctl restart slurmctld") == []


def test_the_start_wait_covers_the_lock_wait() -> None:
    assert SLURMCTLD_START_TIMEOUT_SECONDS > SLURMCTLD_LOCK_WAIT_SECONDS


def test_a_held_lock_stops_the_head_with_what_to_do(tmp_path: Path) -> None:
    env = {"SIM_EXITS_AFTER_START": "slurmctld", "SIM_CONTROLLER_DOWN": "1"}
    node = Node(tmp_path, example("default"), gpus=0, efa=0, nvme_mounted=False, env=env)
    run = node.run("head")
    assert run.returncode != 0
    assert "another head node still holds /home/.slurm/state/slurmctld.lock" in run.output
    assert f"exit status {SLURMCTLD_LOCK_BUSY_EXIT}" in run.output


def test_a_controller_that_never_answers_fails_after_the_start_timeout(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), gpus=0, efa=0, env={"SIM_CONTROLLER_DOWN": "1"})
    run = node.run("head")
    assert run.returncode != 0
    assert f"does not answer 'scontrol ping' after {SLURMCTLD_START_TIMEOUT_SECONDS} s" in run.output
    pings = run.called("scontrol ping")
    assert len(pings) == SLURMCTLD_START_TIMEOUT_SECONDS // 5 + 1


@pytest.mark.skipif(shutil.which("flock") is None, reason="util-linux flock is not installed")
def test_the_unit_command_line_refuses_while_another_holds_the_lock(tmp_path: Path) -> None:
    """The drop-in's own flock line, run for real with slurmctld swapped for `true`."""
    node = Node(tmp_path / "node", example("default"), gpus=0, efa=0, nvme_mounted=False)
    assert node.run("head").returncode == 0
    lock = tmp_path / "slurmctld.lock"
    command = _exec_start(node).replace("/home/.slurm/state/slurmctld.lock", str(lock))
    command = re.sub(r"--wait \d+", "--wait 1", command)
    command = command.replace("/usr/sbin/slurmctld -D $SLURMCTLD_OPTIONS", "true")
    command = command.replace("/usr/bin/flock", shutil.which("flock") or "flock")
    # Its own session, so killing the group also ends the `sleep` that inherited the lock.
    holder = subprocess.Popen(["flock", str(lock), "sleep", "30"], start_new_session=True)
    try:
        for _ in range(50):
            if subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode != 0:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert subprocess.run(command.split(), check=False).returncode == SLURMCTLD_LOCK_BUSY_EXIT
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    assert subprocess.run(command.split(), check=False).returncode == 0

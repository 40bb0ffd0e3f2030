"""The head node's controller rules with the real slurmctld: the unit's flock line keeps a
second controller off the state directory until the first stops, and `scontrol
reconfigure` applies what the head's update timer installs."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap.cluster_conf import SLURMCTLD_LOCK_BUSY_EXIT, SLURMCTLD_RESTART_KEYS
from gpucluster.resolved import resolve
from gpucluster.slurm.conf import max_node_count
from tests.bootstrap_runs import example
from tests.integration.cluster import SlurmCluster
from tests.integration.host import HarnessError, require_free_port, wait_for
from tests.integration.network import with_hosts
from tests.integration.site_files import SLURMCTLD_PORT
from tests.shell_harness import Node

pytestmark = pytest.mark.slurm

DROPIN = "etc/systemd/system/slurmctld.service.d/gpucluster.conf"


@pytest.fixture(scope="module")
def unit_command(tmp_path_factory) -> str:
    """ExecStart of the slurmctld drop-in the head's bootstrap installs (run under stubs)."""
    node = Node(tmp_path_factory.mktemp("head"), example("default"), gpus=0, efa=0, nvme_mounted=False)
    run = node.run("head")
    assert run.returncode == 0, run.output
    line = next(
        line for line in (node.root / DROPIN).read_text().splitlines() if line.startswith("ExecStart=/")
    )
    return line.removeprefix("ExecStart=")


def _port_free() -> bool:
    try:
        require_free_port(SLURMCTLD_PORT)
    except HarnessError:
        return False
    return True


def _controller(cluster: SlurmCluster, command: str, wait: int) -> subprocess.Popen:
    """The unit's command line with this cluster's state directory and slurmctld."""
    command = command.replace("/home/.slurm/state", str(cluster.root / "state"))
    command = re.sub(r"--wait \d+", f"--wait {wait}", command)
    command = command.replace("/usr/bin/flock", "flock")
    command = command.replace("/usr/sbin/slurmctld -D $SLURMCTLD_OPTIONS", "slurmctld -D")
    log = open(cluster.root / "log" / "slurmctld-locked.stdout", "ab")  # noqa: SIM115 - kept by Popen
    # Its own session: stopping it ends flock and the slurmctld it runs, like systemd's stop.
    return subprocess.Popen(
        with_hosts(cluster.etc_hosts, cluster.install.command(command.split())),
        env=cluster.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _answers(cluster: SlurmCluster) -> bool:
    return "is UP" in cluster.slurm("scontrol", "ping", check=False).stdout


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def test_a_second_controller_waits_for_the_state_lock(cluster: SlurmCluster, unit_command: str):
    cluster.stop_controller(hard=False)
    first = second = None
    try:
        wait_for("slurmctld's port to be free", _port_free, timeout=30)
        first = _controller(cluster, unit_command, wait=5)
        wait_for("the locked slurmctld to answer", lambda: _answers(cluster), timeout=30)
        refused = _controller(cluster, unit_command, wait=2)
        assert refused.wait(timeout=30) == SLURMCTLD_LOCK_BUSY_EXIT
        assert _answers(cluster) and first.poll() is None
        # A replacement head that starts while the old one still runs takes over once it stops.
        second = _controller(cluster, unit_command, wait=60)
        assert second.poll() is None
        _stop(first)
        wait_for("the second slurmctld to take over", lambda: _answers(cluster), timeout=60)
        assert second.poll() is None
    finally:
        for process in (first, second):
            if process is not None:
                _stop(process)
        wait_for("slurmctld's port to be free", _port_free, timeout=30)
        cluster.start_controller()
    for name in cluster.nodes:
        cluster.wait_node_state(name, lambda s: "NOT_RESPONDING" not in s, "to answer", 60)


def _shows(cluster: SlurmCluster, key: str, value: str) -> bool:
    config = cluster.slurm("scontrol", "show", "config").stdout
    return bool(re.search(rf"^{key}\s*=\s*{value}\s*$", config, re.MULTILINE | re.IGNORECASE))


def test_a_new_max_node_count_is_applied_by_a_restart_that_keeps_the_nodes(cluster: SlurmCluster):
    """What the head's update does on a resize. A reconfigure instead made slurmctld 22.05.8
    exit ("fatal: MaxNodeCount has changed (5->12) during reconfig, slurmctld must be
    restarted"), so MaxNodeCount is one of SLURMCTLD_RESTART_KEYS."""
    assert "MaxNodeCount" in SLURMCTLD_RESTART_KEYS
    conf = Path(cluster.site.config_dir) / "slurm.conf"
    original = conf.read_text()
    current = max_node_count(resolve(cluster.cfg))
    try:
        conf.write_text(original.replace(f"MaxNodeCount={current}\n", f"MaxNodeCount={current + 7}\n"))
        cluster.stop_controller(hard=False)
        cluster.start_controller()
        assert _shows(cluster, "MaxNodeCount", str(current + 7))
        for name in cluster.nodes:
            cluster.wait_node_state(name, lambda s: "IDLE" in s and "NOT_RESPONDING" not in s, "IDLE", 60)
    finally:
        conf.write_text(original)
        cluster.stop_controller(hard=False)
        cluster.start_controller()
    for name in cluster.nodes:
        cluster.wait_node_state(name, lambda s: "NOT_RESPONDING" not in s, "to answer", 60)


def test_reconfigure_applies_a_setting_outside_the_restart_keys(cluster: SlurmCluster):
    conf = Path(cluster.site.config_dir) / "slurm.conf"
    original = conf.read_text()
    assert "SlurmctldDebug=info\n" in original
    try:
        conf.write_text(original.replace("SlurmctldDebug=info\n", "SlurmctldDebug=debug\n"))
        cluster.slurm("scontrol", "reconfigure")
        wait_for("SlurmctldDebug=debug", lambda: _shows(cluster, "SlurmctldDebug", "debug"), timeout=30)
        assert cluster.controller is not None and cluster.controller.poll() is None
    finally:
        conf.write_text(original)
        cluster.slurm("scontrol", "reconfigure")

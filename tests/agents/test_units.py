"""The controller's systemd service and timer: what they run, how often, and that
systemd-analyze accepts every gpucluster unit."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpucluster.agents import runtime
from tests.agent_scripts import UNITS, systemd_unit


def test_the_controller_units_run_the_bundled_script_every_minute():
    service = systemd_unit("gpucluster-capacity-controller.service")
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["EnvironmentFile"] == runtime.ENV_FILE
    assert (
        service["Service"]["ExecStart"]
        == "/usr/bin/python3 /opt/gpucluster/bundle/agents/capacity_controller.py"
    )
    assert "slurmctld.service" in service["Unit"]["After"].split()
    # Ordered after slurmctld but not bound to it: scale-in must happen without Slurm.
    assert "Requires" not in service["Unit"] and "BindsTo" not in service["Unit"]
    timer = systemd_unit("gpucluster-capacity-controller.timer")
    assert timer["Timer"]["OnCalendar"] == "*-*-* *:*:00"
    assert int(service["Service"]["TimeoutStartSec"]) < 60


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    for unit in UNITS.glob("gpucluster-*"):
        shutil.copy(unit, tmp_path / unit.name)
    result = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(p) for p in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        check=False,
    )
    # verify exits 0 on unknown keys and bad values; it only warns, so read the warnings too.
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr

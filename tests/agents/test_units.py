"""The controller's systemd service and timer: what they run, how often, and that
systemd-analyze accepts every gpucluster unit."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from gpucluster.agents import runtime
from gpucluster.resolved.node_layout import NODE_LAYOUT
from tests.agent_scripts import systemd_unit, unit_names, unit_text


def test_the_controller_units_run_the_bundled_agent_every_minute():
    service = systemd_unit("gpucluster-capacity-controller.service")
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["EnvironmentFile"] == runtime.ENV_FILE
    assert service["Service"]["WorkingDirectory"] == NODE_LAYOUT.agents_dir
    assert service["Service"]["ExecStart"] == "/usr/bin/python3 -m gpucluster.agents.capacity_controller"
    assert "slurmctld.service" in service["Unit"]["After"].split()
    # Ordered after slurmctld but not bound to it: scale-in must happen without Slurm.
    assert "Requires" not in service["Unit"] and "BindsTo" not in service["Unit"]
    timer = systemd_unit("gpucluster-capacity-controller.timer")
    assert timer["Timer"]["OnCalendar"] == "*-*-* *:*:00"
    assert int(service["Service"]["TimeoutStartSec"]) < 60


def test_the_units_pass_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    for name in unit_names():
        (tmp_path / name).write_text(unit_text(name))
    result = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(p) for p in tmp_path.iterdir())],
        capture_output=True,
        text=True,
        check=False,
    )
    # verify exits 0 on unknown keys and bad values; it only warns, so read the warnings too.
    assert result.returncode == 0 and result.stderr.strip() == "", result.stderr

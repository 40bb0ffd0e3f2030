"""The dcgm-diag job: DCGM's diagnostic at the level asked for (3 and 4 on demand), each level
bounded and given the time it needs, the failed tests named, a failing node drained with a
`dcgm:` reason where the job may drain, and told how to otherwise."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from gpucluster.config.loader import load_config
from gpucluster.jobs.validation import dcgm_job_minutes
from tests.conftest import REPO
from tests.dcgm_reports import report
from tests.jobs.rendered import job_of

CFG = load_config(REPO / "examples" / "default.yaml")
NODE = "gpu-i-0123456789abcdef0"


def job() -> str:
    return job_of(CFG, CFG.compute_groups[0], "dcgm-diag")


class FakeComputeNode:
    def __init__(
        self,
        root: Path,
        dcgm: str | None,
        dcgm_exit: int = 0,
        may_drain: bool = True,
        hostengine_running: bool = True,
    ):
        self.bin = root / "bin"
        self.bin.mkdir()
        self.calls = root / "calls"
        running = 0 if hostengine_running else 1
        self._stub("pgrep", f'[[ "$*" == "-x nv-hostengine" ]] && exit {running}; exit 1')
        if dcgm == "hang":
            self._stub("dcgmi", "trap '' TERM; sleep 30")
        elif dcgm is not None:
            (root / "report.json").write_text(dcgm)
            self._stub("dcgmi", f"cat {root / 'report.json'}; exit {dcgm_exit}")
        denied = 'echo "slurm_update error: Access/permission denied" >&2; exit 1'
        self._stub("scontrol", "exit 0" if may_drain else denied)

    def _stub(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> {self.calls}\n{body}\n')
        path.chmod(0o755)

    def recorded(self, tool: str) -> list[str]:
        text = self.calls.read_text() if self.calls.exists() else ""
        return [line for line in text.splitlines() if line.startswith(tool + " ")]

    def run(self, script: str, snippet: str, *args: str, env: dict[str, str] | None = None):
        # Sourced (main does not run), with the job's arguments as the script's.
        return subprocess.run(
            ["bash", "-c", f'source /dev/stdin "$@" <<<"$0"; {snippet}', script, *args],
            env={"PATH": f"{self.bin}:/usr/bin:/bin", "SLURMD_NODENAME": NODE, **(env or {})},
            capture_output=True,
            text=True,
            timeout=60,
        )


def test_passing_node_prints_its_pass_line_at_the_level_asked_for(tmp_path):
    node = FakeComputeNode(tmp_path, report())
    result = node.run(job(), "node_diag", "3")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"gpucluster-dcgm-diag node={NODE} result=pass reason=dcgmi diag -r 3 passed\n"
    assert node.recorded("dcgmi") == ["dcgmi diag -r 3 -j"]
    assert node.recorded("scontrol") == []


def test_failing_node_is_drained_with_a_dcgm_reason_naming_the_tests(tmp_path):
    node = FakeComputeNode(tmp_path, report(failing={"memory": {5}}), dcgm_exit=226)
    result = node.run(job(), "node_diag", "4")
    assert result.returncode == 1
    reason = "dcgm: diag level 4 failed: memory (GPU 5)"
    assert node.recorded("scontrol") == [f"scontrol update NodeName={NODE} State=DRAIN Reason={reason}"]
    assert result.stdout == f"gpucluster-dcgm-diag node={NODE} result=fail reason=drained: {reason}\n"


def test_a_user_who_may_not_drain_is_told_the_command(tmp_path):
    node = FakeComputeNode(tmp_path, report(failing={"pcie": {2}}), dcgm_exit=226, may_drain=False)
    result = node.run(job(), "node_diag", "3")
    assert result.returncode == 1
    assert "not drained (this job's user may not): sudo scontrol update " in result.stdout
    assert f'NodeName={NODE} State=DRAIN Reason="dcgm: diag level 3 failed: pcie (GPU 2)"' in result.stdout


def test_hung_diagnostic_is_cut_at_its_levels_bound(tmp_path):
    node = FakeComputeNode(tmp_path, "hang")
    script = job().replace("[3]=3600", "[3]=1").replace("readonly KILL_GRACE=10", "readonly KILL_GRACE=1")
    started = time.monotonic()
    result = node.run(script, "node_diag", "3")
    assert time.monotonic() - started < 10
    assert result.returncode == 1
    assert "reason=drained: dcgm: dcgmi diag -r 3 hung (no answer in 1 s)" in result.stdout


def test_node_without_dcgm_says_so_and_passes(tmp_path):
    node = FakeComputeNode(tmp_path, None)
    result = node.run(job(), "node_diag")
    assert result.returncode == 0
    assert "result=skip reason=dcgmi is not installed on this image: no DCGM diagnostic" in result.stdout


def test_node_whose_hostengine_is_not_running_is_skipped_not_drained(tmp_path):
    refused = "Error: unable to establish a connection to the specified host: localhost"
    node = FakeComputeNode(tmp_path, refused, dcgm_exit=255, hostengine_running=False)
    result = node.run(job(), "node_diag", "3")
    assert result.returncode == 0
    assert "result=skip reason=nv-hostengine is not running: no DCGM diagnostic" in result.stdout
    assert node.recorded("dcgmi") == []
    assert node.recorded("scontrol") == []


@pytest.mark.parametrize(("level", "minutes"), [(3, 63), (4, 243)])
def test_a_level_longer_than_the_job_says_which_time_to_ask_for(tmp_path, level, minutes):
    node = FakeComputeNode(tmp_path, report())
    end = str(int(time.time()) + 30 * 60)
    result = node.run(job(), "require_time_for_level", str(level), env={"SLURM_JOB_END_TIME": end})
    assert result.returncode == 1
    assert (
        f"sbatch --time={minutes} --nodes=N /opt/gpucluster/jobs/gpu/dcgm-diag.sbatch {level}"
        in result.stdout
    )
    assert dcgm_job_minutes()[level] == minutes


def test_level_2_fits_the_default_time_and_a_bad_level_is_refused(tmp_path):
    node = FakeComputeNode(tmp_path, report())
    end = {"SLURM_JOB_END_TIME": str(int(time.time()) + 30 * 60)}
    assert node.run(job(), "require_time_for_level", env=end).returncode == 0
    refused = node.run(job(), "require_time_for_level", "5", env=end)
    assert refused.returncode == 1
    assert "level '5' is not a DCGM diagnostic level; use 1, 2, 3 or 4" in refused.stdout

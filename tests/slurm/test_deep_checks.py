"""The health check's deep modes: DCGM's diagnostic before a node joins (--pre-join) and on
demand (--dcgm LEVEL), and the light check Slurm runs as the Prolog before every job."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.efa import efa_count
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.health_probes import PROLOG_EPILOG_TIMEOUT_SECONDS, ProbeTimeouts
from tests.conftest import REPO
from tests.dcgm_reports import report
from tests.slurm.conf_text import settings, single
from tests.slurm.healthcheck_node import NODE_HOSTS, FakeNode, run_healthcheck

CFG = load_config(REPO / "examples" / "default.yaml")
EFA = efa_count(CFG.compute_groups[0].instance)
NODE = "gpu-i-0123456789abcdef0"


def node(tmp_path: Path, **changes) -> FakeNode:
    tmp_path.mkdir(exist_ok=True)
    values = {"gpus": 8, "efa": EFA, "mounted": {"/home", "/fsx"}} | changes
    return FakeNode(tmp_path, **values)


def with_join_level(level: int) -> ClusterConfig:
    raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    raw["health"] = {"dcgm_level_at_join": level}
    return ClusterConfig.model_validate(raw)


class TestDcgmBeforeJoining:
    def test_passing_diagnostic_lets_the_node_join(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report())
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 0, result.stdout
        assert fake.recorded("dcgmi") == ["dcgmi diag -r 2 -j"]
        assert "DCGM diagnostic level 2 passed" in result.stdout

    def test_failing_diagnostic_names_each_failed_test_and_its_gpus(self, tmp_path):
        failing = report(failing={"memory": {3}, "pcie": {1, 6}}, skipped={"targeted_stress"})
        fake = node(tmp_path, dcgm_report=failing, dcgm_exit=226)
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 1
        assert "FAIL: dcgm: diag level 2 failed: pcie (GPU 1, GPU 6), memory (GPU 3)" in result.stdout
        assert fake.recorded("scontrol") == []

    def test_a_failed_test_fails_the_node_even_when_dcgmi_exits_zero(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report(failing={"software": {0}}))
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 1
        assert "diag level 2 failed: software (GPU 0)" in result.stdout

    def test_runtime_error_is_named(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report(runtime_error="NVVS could not start"), dcgm_exit=1)
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 1
        assert "diag level 2 failed: runtime error: NVVS could not start" in result.stdout

    def test_output_that_is_no_report_fails_and_quotes_it(self, tmp_path):
        refused = "Error: unable to establish a connection to the specified host: localhost"
        fake = node(tmp_path, dcgm_report=refused, dcgm_exit=255)
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 1
        assert f"dcgmi diag -r 2 exited 255 without a report: {refused}" in result.stdout

    def test_failure_without_a_failed_test_still_fails(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report(), dcgm_exit=3)
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 1
        assert "exited 3 and its report names no failed test" in result.stdout

    def test_warnings_do_not_fail_the_node(self, tmp_path):
        warned = report().replace('"status": "Pass"', '"status": "Warn"', 3)
        fake = node(tmp_path, dcgm_report=warned)
        assert run_healthcheck(fake, CFG, "--pre-join").returncode == 0

    def test_hung_diagnostic_is_a_named_failure_within_its_bound(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report(), dcgm_bound=2)
        fake.hang("dcgmi", ignore_term=True)
        started = time.monotonic()
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert time.monotonic() - started < 15
        assert result.returncode == 1
        assert "FAIL: dcgm: dcgmi diag -r 2 hung (no answer in 2 s)" in result.stdout

    def test_absent_dcgm_is_skipped_with_a_line_saying_so(self, tmp_path):
        fake = node(tmp_path)
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 0, result.stdout
        assert "DCGM is not installed on this image (no dcgmi or nv-hostengine): no DCGM diagnostic" in (
            result.stdout
        )

    def test_installed_dcgm_without_its_hostengine_is_skipped_not_failed(self, tmp_path):
        refused = "Error: unable to establish a connection to the specified host: localhost"
        fake = node(tmp_path, dcgm_report=refused, dcgm_exit=255, hostengine_running=False)
        result = run_healthcheck(fake, CFG, "--pre-join")
        assert result.returncode == 0, result.stdout
        assert fake.recorded("dcgmi") == []
        assert "DCGM's nv-hostengine is not running" in result.stdout

    def test_level_zero_turns_it_off(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report(failing={"memory": {0}}))
        result = run_healthcheck(fake, with_join_level(0), "--pre-join")
        assert result.returncode == 0
        assert fake.recorded("dcgmi") == []
        assert "health.dcgm_level_at_join: 0" in result.stdout

    def test_level_one_runs_level_one(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report())
        assert run_healthcheck(fake, with_join_level(1), "--pre-join").returncode == 0
        assert fake.recorded("dcgmi") == ["dcgmi diag -r 1 -j"]

    def test_a_node_that_fails_its_quick_probes_does_not_run_the_diagnostic(self, tmp_path):
        fake = node(tmp_path, gpus=7, dcgm_report=report())
        assert run_healthcheck(fake, CFG, "--pre-join").returncode == 1
        assert fake.recorded("dcgmi") == []

    def test_slurmds_periodic_check_never_runs_the_diagnostic(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report())
        assert run_healthcheck(fake, CFG).returncode == 0
        assert fake.recorded("dcgmi") == []


PROLOG_ENV = {"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURM_JOB_ID": "42"}


class TestProlog:
    def test_healthy_node_passes_quickly_with_the_light_probes_only(self, tmp_path):
        fake = node(tmp_path, dcgm_report=report())
        started = time.monotonic()
        result = run_healthcheck(fake, CFG, env=PROLOG_ENV)
        elapsed_ms = (time.monotonic() - started) * 1000
        assert result.returncode == 0, result.stdout
        assert fake.recorded("nvidia-smi") == ["nvidia-smi -L"]
        assert fake.recorded("fi_info") == ["fi_info -p efa -t FI_EP_RDM"]
        assert fake.recorded("mountpoint") == []
        assert fake.recorded("munge") == []
        assert fake.recorded("dcgmi") == []
        assert fake.recorded("scontrol") == []
        # Then the node names, whose failure (the stub exits 1) is no failure of the job.
        assert fake.recorded(NODE_HOSTS) == [f"{NODE_HOSTS} "]
        print(f"prolog on a healthy node: {elapsed_ms:.0f} ms")

    def test_a_failing_prolog_and_the_other_modes_leave_the_node_names_alone(self, tmp_path):
        sick = node(tmp_path / "sick", gpus=7)
        assert run_healthcheck(sick, CFG, env=PROLOG_ENV).returncode == 1
        healthy = node(tmp_path / "healthy", dcgm_report=report())
        assert run_healthcheck(healthy, CFG).returncode == 0
        assert run_healthcheck(healthy, CFG, "--pre-join").returncode == 0
        assert sick.recorded(NODE_HOSTS) == [] and healthy.recorded(NODE_HOSTS) == []

    def test_prolog_option_is_the_same_mode(self, tmp_path):
        fake = node(tmp_path, gpus=7)
        result = run_healthcheck(fake, CFG, "--prolog")
        assert result.returncode == 1
        assert fake.recorded("scontrol") == [
            f"scontrol update NodeName={NODE} State=DRAIN Reason=prolog: GPU count 7, want 8"
        ]

    def test_missing_efa_device_drains_with_the_prolog_reason(self, tmp_path):
        fake = node(tmp_path, efa=EFA - 1)
        result = run_healthcheck(fake, CFG, env=PROLOG_ENV)
        assert result.returncode == 1
        assert fake.recorded("scontrol") == [
            f"scontrol update NodeName={NODE} State=DRAIN "
            f"Reason=prolog: EFA interface count {EFA - 1}, want {EFA}"
        ]

    fast = ProbeTimeouts(nvidia_smi=1, fi_info=1, fabric_manager=1, mount=1, munge=1, scontrol=1)

    @pytest.mark.parametrize(
        ("probe", "reason"),
        [
            ("nvidia-smi", "prolog: nvidia-smi -L hung (no answer in 1 s)"),
            ("fi_info", "prolog: fi_info hung (no answer in 1 s)"),
            ("systemctl", "prolog: fabric manager state unknown (systemctl gave no answer in 1 s)"),
        ],
    )
    def test_hung_probe_drains_with_its_name_within_the_bound(self, tmp_path, probe, reason):
        fake = node(tmp_path, timeouts=self.fast)
        fake.hang(probe, ignore_term=True)
        started = time.monotonic()
        result = run_healthcheck(fake, CFG, env=PROLOG_ENV)
        elapsed = time.monotonic() - started
        assert elapsed <= self.fast.prolog_worst_case_seconds() + 2, elapsed
        assert result.returncode == 1
        [drain] = fake.recorded("scontrol")
        assert drain == f"scontrol update NodeName={NODE} State=DRAIN Reason={reason}"


def test_prologs_worst_case_stays_well_under_prolog_epilog_timeout():
    worst = ProbeTimeouts().prolog_worst_case_seconds()
    assert worst <= PROLOG_EPILOG_TIMEOUT_SECONDS / 2
    with pytest.raises(ValueError, match="the Prolog's probes may run"):
        ProbeTimeouts(nvidia_smi=40, fi_info=20).check_prolog_budget()


class TestSlurmConfProlog:
    def test_prolog_is_the_health_check_and_a_failing_one_requeues_unheld(self, example):
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        assert single(conf, "Prolog") == single(conf, "HealthCheckProgram")
        assert int(single(conf, "PrologEpilogTimeout")) == PROLOG_EPILOG_TIMEOUT_SECONDS
        assert "nohold_on_prolog_fail" in single(conf, "SchedulerParameters").split(",")
        assert single(conf, "PrologFlags") == "Contain"

    def test_prolog_check_off_leaves_no_prolog_but_the_timeout(self):
        raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
        raw["health"] = {"prolog_check": False}
        conf = settings(slurm_conf.render_slurm_files(resolve(ClusterConfig.model_validate(raw))).slurm_conf)
        assert "Prolog" not in conf
        assert "SchedulerParameters" not in conf
        assert int(single(conf, "PrologEpilogTimeout")) == PROLOG_EPILOG_TIMEOUT_SECONDS


# `nvidia-smi -L` as an H200 printed it (the lead's capture, 2026-12-04: one GPU, driver
# 580.159.04); the file starts with the command and ends with its exit status.
H200_LISTING = REPO / "tests" / "fixtures" / "h200" / "nvidia-smi-L.txt"


def h200_lines(gpus: int) -> str:
    [line] = [line for line in H200_LISTING.read_text().splitlines() if line.startswith("GPU ")]
    return "".join(line.replace("GPU 0:", f"GPU {index}:", 1) + "\n" for index in range(gpus))


@pytest.mark.parametrize(("gpus", "drained"), [(8, False), (1, True)])
def test_prolog_reads_a_real_h200_listing(tmp_path, gpus, drained):
    fake = node(tmp_path)
    listing = tmp_path / "listing.txt"
    listing.write_text(h200_lines(gpus))
    fake._stub("nvidia-smi", f"cat {listing}")
    result = run_healthcheck(fake, CFG, env=PROLOG_ENV)
    assert result.returncode == (1 if drained else 0), result.stdout
    expected = [f"scontrol update NodeName={NODE} State=DRAIN Reason=prolog: GPU count 1, want 8"]
    assert fake.recorded("scontrol") == (expected if drained else [])

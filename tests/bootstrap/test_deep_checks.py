"""DCGM's diagnostic before a compute node joins Slurm: the bootstrap starts nv-hostengine,
the pre-join health check runs `dcgmi diag -r 2 -j`, and a failed, hung or broken diagnostic
keeps the node out of Slurm, abandons its launch and names the failed tests in the tag."""

from __future__ import annotations

import time
from pathlib import Path

import yaml

from gpucluster.config import ClusterConfig
from gpucluster.names import BOOTSTRAP_FAILURE_TAG as FAILURE_TAG
from tests.bootstrap_runs import abandoned, continued, example, slurmd_started
from tests.dcgm_reports import report
from tests.shell_harness import Node


def test_passing_diagnostic_runs_before_slurmd_and_the_node_joins(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), dcgm_report=report())
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert continued(run) and not abandoned(run)
    started = run.index("systemctl enable --now nvidia-dcgm")
    diagnostic = run.index("dcgmi diag -r 2 -j")
    assert started < diagnostic < run.index("systemctl start slurmd")
    assert "DCGM diagnostic level 2 passed" in run.output


def test_failed_tests_keep_the_node_out_and_are_named_in_the_tag(tmp_path: Path) -> None:
    failing = report(failing={"memory": {3}, "pcie": {1}})
    node = Node(tmp_path, example("default"), dcgm_report=failing, dcgm_exit=226)
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert not slurmd_started(run)
    assert abandoned(run) and not continued(run)
    assert (
        "pre-join health check failed: dcgm: diag level 2 failed: pcie (GPU 1), memory (GPU 3); "
        "this node does not join Slurm" in run.output
    )
    [tag] = run.called("aws --region us-east-2 ec2 create-tags")
    assert (
        f"Key={FAILURE_TAG},Value=pre-join health check failed: dcgm: diag level 2 failed: pcie  GPU 1" in tag
    )
    assert "FAILED" in (node.root / "dev/console").read_text()


def test_hung_diagnostic_is_cut_at_its_bound_and_named(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), dcgm_report=report(), dcgm_hangs=True, dcgm_bound=2)
    started = time.monotonic()
    run = node.run("compute", "gpu")
    assert time.monotonic() - started < 60
    assert run.returncode != 0
    assert abandoned(run) and not slurmd_started(run)
    assert "pre-join health check failed: dcgm: dcgmi diag -r 2 hung (no answer in 2 s)" in run.output


def test_image_without_dcgm_joins_and_says_the_diagnostic_was_skipped(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert "no nvidia-dcgm service on this image: DCGM is absent and its diagnostic is skipped" in run.output
    assert "DCGM is not installed on this image (no dcgmi or nv-hostengine): no DCGM diagnostic" in run.output
    assert continued(run)


def test_hostengine_that_does_not_start_fails_the_node_saying_how_to_turn_it_off(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), dcgm_report=report(), env={"SIM_FAIL_UNIT": "nvidia-dcgm"})
    run = node.run("compute", "gpu")
    assert run.returncode != 0 and abandoned(run)
    assert "nvidia-dcgm did not start" in run.output
    assert "health.dcgm_level_at_join: 0" in run.output


def test_level_zero_runs_no_diagnostic(tmp_path: Path) -> None:
    raw = yaml.safe_load(example("default").model_dump_json())
    raw["health"]["dcgm_level_at_join"] = 0
    cfg = ClusterConfig.model_validate(raw)
    node = Node(tmp_path, cfg, dcgm_report=report(failing={"memory": {0}}))
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert run.called("dcgmi") == []
    assert run.called("systemctl enable --now nvidia-dcgm") == []

"""The health check's probe timeouts stay inside slurmd's HealthCheckProgram limit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpucluster.config.loader import load_config
from gpucluster.slurm.conf import SlurmSite
from gpucluster.slurm.health_probes import (
    KILL_GRACE_SECONDS,
    MARGIN_SECONDS,
    SLURMD_HEALTHCHECK_LIMIT_SECONDS,
    ProbeTimeouts,
)
from tests.slurm.conf_text import healthcheck_of

REPO = Path(__file__).resolve().parents[2]
# /home plus the FSx mount point: the most mounts a node checks.
MOST_MOUNTS = 2


def test_default_worst_case_leaves_a_margin_under_slurmds_limit():
    worst = ProbeTimeouts().worst_case_seconds(MOST_MOUNTS)
    assert worst + MARGIN_SECONDS <= SLURMD_HEALTHCHECK_LIMIT_SECONDS
    assert MARGIN_SECONDS >= 10


def test_worst_case_counts_every_probe_and_its_kill_grace():
    timeouts = ProbeTimeouts(nvidia_smi=1, fi_info=2, fabric_manager=3, mount=4, munge=5, scontrol=6)
    assert timeouts.worst_case_seconds(2) == 1 + 2 + 3 + 4 * 2 + 5 + 6 + 7 * KILL_GRACE_SECONDS


def test_timeouts_past_the_budget_are_refused_at_render():
    cfg = load_config(REPO / "examples" / "default.yaml")
    site = SlurmSite(probe_timeouts=ProbeTimeouts(nvidia_smi=40))
    with pytest.raises(ValueError, match=r"more than the 50 s left under slurmd's 60 s"):
        healthcheck_of(cfg, cfg.compute_groups[0], site)


def test_zero_timeout_is_refused():
    with pytest.raises(ValueError, match="ProbeTimeouts.mount must be at least 1 s"):
        ProbeTimeouts(mount=0)


@pytest.mark.parametrize("example", sorted((REPO / "examples").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_probe_in_the_rendered_check_is_bounded(example):
    cfg = load_config(example)
    for group in cfg.compute_groups:
        script = healthcheck_of(cfg, group)
        for tool in ("nvidia-smi", "fi_info", "mountpoint", "munge", "unmunge", "scontrol"):
            calls = [line for line in script.splitlines() if re.search(rf"(^|[\s(|]){tool} ", line)]
            calls = [line for line in calls if not line.lstrip().startswith(("#", "log ", "fail "))]
            assert calls, f"{tool} is not called"
            for line in calls:
                assert "bounded " in line, f"unbounded probe in {example.name}: {line.strip()}"

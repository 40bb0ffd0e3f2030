"""The capacity controller publishes each active block's minutes left (the dashboard's
block widget and the block-ending alarm read it)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from gpucluster.agents import metric_names as m
from tests.agents.fakes import END, START
from tests.agents.scenario import block_aws, slurm_at


def test_an_active_block_reports_its_minutes_left(tmp_path: Path):
    now = END - timedelta(hours=5, minutes=30)
    slurm = slurm_at(now)
    assert block_aws("active", (0, 2, 2)).run_with(slurm, now, metrics_dir=str(tmp_path)) == 0
    (written,) = tmp_path.glob("*.emf")
    (record,) = [json.loads(line) for line in written.read_text().splitlines()]
    assert record[m.GROUP] == "train"
    assert record[m.CAPACITY_BLOCK_MINUTES_LEFT.name] == 330
    assert record["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "gpucluster/demo"


def test_a_block_not_yet_active_reports_nothing(tmp_path: Path):
    now = START - timedelta(days=1)
    assert block_aws("scheduled", (0, 2, 0)).run_with(slurm_at(now), now, metrics_dir=str(tmp_path)) == 0
    assert list(tmp_path.glob("*.emf")) == []

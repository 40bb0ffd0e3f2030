"""The head's Slurm collector without a controller: scontrol's answers as Slurm 25.11.7
printed them in the suite (tests/fixtures/metrics), CloudWatch through botocore's Stubber."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.agents import metric_names as m
from gpucluster.agents import slurm_jobs, slurm_metrics
from gpucluster.agents.scontrol import CommandResult
from tests.conftest import REPO

JOBS = (REPO / "tests" / "fixtures" / "metrics" / "scontrol-d-o-show-jobs-25.11.7.txt").read_text()
A, B = "gpu-i-0a1b2c3d4e5f60001", "gpu-i-0a1b2c3d4e5f60002"
NOW = datetime(2026, 12, 4, 21, 30, tzinfo=UTC)
NODES = (
    f"NodeName={A} Arch=x86_64 CfgTRES=cpu=192,mem=2000G,billing=192,gres/gpu=8 "
    "AllocTRES=cpu=6,mem=1200G,gres/gpu=5 State=MIXED+DYNAMIC_NORM Reason=x State=IDLE\n"
    f"NodeName={B} CfgTRES=cpu=192,gres/gpu=8 AllocTRES=cpu=2,gres/gpu=3 State=MIXED+DRAIN+DYNAMIC_NORM\n"
    "NodeName=gpu-i-0a1b2c3d4e5f60003 CfgTRES=cpu=192,gres/gpu=8 AllocTRES= State=DOWN+DRAIN+NOT_RESPONDING\n"
    "NodeName=train-block-anchor CfgTRES=cpu=1 State=FUTURE\n"
)


def scontrol(argv: Sequence[str]) -> CommandResult:
    if list(argv) == ["scontrol", "-d", "-o", "show", "jobs"]:
        return CommandResult(tuple(argv), 0, JOBS, "")
    if list(argv) == ["scontrol", "-o", "show", "nodes"]:
        return CommandResult(tuple(argv), 0, NODES, "")
    if list(argv[:3]) == ["scontrol", "show", "hostnames"]:
        assert argv[3] == "gpu-i-0a1b2c3d4e5f[60001-60002]"
        return CommandResult(tuple(argv), 0, f"{A}\n{B}\n", "")
    raise AssertionError(argv)


def test_jobs_hold_the_gpus_slurm_names():
    jobs = {job.job_id: job for job in slurm_jobs.read_jobs(scontrol)}
    assert jobs["1"].state == "RUNNING"
    assert sorted(jobs["1"].gpus) == [(A, 0), (A, 1), (A, 2), (B, 0), (B, 1), (B, 2)]
    assert jobs["2"].gpus == ((A, 4), (A, 5))
    assert jobs["3"].state == "PENDING" and jobs["3"].gpus == ()


@pytest.mark.parametrize(
    "state, bucket",
    [
        ("IDLE+DYNAMIC_NORM", "idle"),
        ("MIXED", "mixed"),
        ("ALLOCATED", "allocated"),
        ("IDLE+DRAIN", "drained"),
        ("ALLOCATED+DRAIN", "drained"),
        ("DOWN+DRAIN+NOT_RESPONDING", "down"),
        ("FUTURE", None),
    ],
)
def test_node_states_fall_in_one_bucket(state, bucket):
    assert slurm_jobs.bucket(state) == bucket


def test_indices_expand_ranges_and_lists():
    assert slurm_jobs.indices("0-2,5,7-7") == [0, 1, 2, 5, 7]


def test_a_cloudwatch_failure_costs_only_the_per_job_figures():
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(cloudwatch) as stub:
        stub.add_client_error("get_metric_data", "Throttling", "Rate exceeded")
        lines = slurm_metrics.collect("demo", cloudwatch, scontrol, NOW)
    records = [json.loads(line) for line in lines]
    assert not [rec for rec in records if m.JOB in rec]
    totals = next(rec for rec in records if m.SLURM_GPUS_TOTAL.name in rec)
    assert m.SLURM_GPUS_IDLE_ALLOCATED.name not in totals
    assert (totals[m.SLURM_GPUS_TOTAL.name], totals[m.SLURM_GPUS_ALLOCATED.name]) == (24, 8)
    assert (totals[m.SLURM_JOBS_RUNNING.name], totals[m.SLURM_JOBS_PENDING.name]) == (2, 1)
    states = {rec[m.STATE]: rec[m.SLURM_NODES.name] for rec in records if m.STATE in rec}
    assert states == {"idle": 0, "allocated": 0, "mixed": 1, "drained": 1, "down": 1}


def test_every_published_metric_is_declared_with_its_dimensions():
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(cloudwatch) as stub:
        results = [
            {"Id": f"g{n}", "Label": "", "Timestamps": [NOW], "Values": [50.0], "StatusCode": "Complete"}
            for n in range(8)
        ]
        stub.add_response("get_metric_data", {"MetricDataResults": results})
        lines = slurm_metrics.collect("demo", cloudwatch, scontrol, NOW)
    declared = {metric.name: metric for metric in m.ALL_METRICS}
    published = set()
    for rec in (json.loads(line) for line in lines):
        meta = rec["_aws"]["CloudWatchMetrics"][0]
        for metric in meta["Metrics"]:
            assert tuple(meta["Dimensions"][0]) == declared[metric["Name"]].dimensions
            published.add(declared[metric["Name"]])
    assert published == set(m.SLURM_METRICS) | set(m.JOB_METRICS)


def test_a_run_writes_its_lines_or_says_why_not(tmp_path, caplog):
    cloudwatch = boto3.client(
        "cloudwatch", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x"
    )
    with Stubber(cloudwatch) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []})
        assert slurm_metrics.run_once("demo", cloudwatch, scontrol, NOW, str(tmp_path / "out")) == 0
    (written,) = (tmp_path / "out").glob("*.emf")
    assert len(written.read_text().splitlines()) == len(m.NODE_STATES) + 1  # no GPU reported: no job lines
    blocked = tmp_path / "file"
    blocked.write_text("")
    with Stubber(cloudwatch) as stub:
        stub.add_response("get_metric_data", {"MetricDataResults": []})
        assert slurm_metrics.run_once("demo", cloudwatch, scontrol, NOW, str(blocked)) == 1
    assert "cannot write the metric records" in caplog.text

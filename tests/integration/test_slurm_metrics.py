"""The head's Slurm metrics collector against the real slurmctld: which GPUs each running
job holds comes from Slurm's own answer (GRES IDX), their utilization from a moto
CloudWatch seeded as the node collectors would have published it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from moto import mock_aws

from gpucluster.agents import metric_names as m
from gpucluster.agents import slurm_jobs, slurm_metrics
from tests.integration.cluster import SlurmCluster
from tests.integration.test_head_agents import scontrol_runner

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 30
BUSY, IDLE = 93.0, 1.0


def seed_utilization(cloudwatch, cluster: str, values: dict[tuple[str, int], float], when: datetime) -> None:
    for (node, index), value in values.items():
        cloudwatch.put_metric_data(
            Namespace=m.namespace(cluster),
            MetricData=[
                {
                    "MetricName": m.GPU_UTILIZATION.name,
                    "Dimensions": [{"Name": m.NODE, "Value": node}, {"Name": m.GPU, "Value": str(index)}],
                    "Timestamp": when,
                    "Value": value,
                    "Unit": "Percent",
                }
            ],
        )


def test_running_jobs_get_their_own_gpus_utilization(cluster: SlurmCluster, tmp_path):
    run = scontrol_runner(cluster)
    nodes = sorted(cluster.nodes)
    wide = cluster.submit(
        "--nodes=2", "--gpus-per-node=3", "--cpus-per-task=1", "--output=/dev/null", script="sleep 120\n"
    )
    cluster.wait_job_state(wide, {"RUNNING"}, JOB_TIMEOUT)
    narrow = cluster.submit(
        "--nodes=1", "--gpus-per-node=2", "--cpus-per-task=1", "--output=/dev/null", script="sleep 120\n"
    )
    cluster.wait_job_state(narrow, {"RUNNING"}, JOB_TIMEOUT)
    waiting = cluster.submit(
        "--nodes=2", "--gpus-per-node=8", "--cpus-per-task=1", "--output=/dev/null", script="true\n"
    )
    try:
        # Kept beside the test's other files: what this Slurm release printed.
        (tmp_path / "scontrol-jobs.txt").write_text(run(["scontrol", "-d", "-o", "show", "jobs"]).stdout)
        jobs = {job.job_id: job for job in slurm_jobs.read_jobs(run)}
        assert jobs[waiting].state == "PENDING"
        wide_gpus, narrow_gpus = set(jobs[wide].gpus), set(jobs[narrow].gpus)
        # Slurm's own placement: three GPUs on each node for the wide job, two elsewhere.
        assert {node for node, _ in wide_gpus} == set(nodes)
        assert sorted(index for node, index in wide_gpus if node == nodes[0]) == [0, 1, 2]
        assert len(narrow_gpus) == 2 and not narrow_gpus & wide_gpus
        now = datetime.now(UTC).replace(microsecond=0)
        # The wide job's GPUs on the first node work, on the second sit idle; the narrow
        # job's work. Another node's GPU 7 is busy but held by no job: it counts nowhere.
        values = {gpu: (BUSY if gpu[0] == nodes[0] else IDLE) for gpu in wide_gpus}
        values.update(dict.fromkeys(narrow_gpus, BUSY))
        values.setdefault((nodes[1], 7), BUSY)
        with mock_aws():
            cloudwatch = boto3.client("cloudwatch", region_name="us-east-2")
            seed_utilization(cloudwatch, cluster.cfg.name, values, now - timedelta(minutes=1))
            lines = slurm_metrics.collect(cluster.cfg.name, cloudwatch, run, now)
    finally:
        cluster.slurm("scancel", "--user=root")
    records = [json.loads(line) for line in lines]
    per_job = {rec[m.JOB]: rec for rec in records if m.JOB in rec}
    assert set(per_job) == {wide, narrow}
    assert per_job[wide][m.JOB_GPU_UTILIZATION.name] == round((3 * BUSY + 3 * IDLE) / 6, 1)
    assert per_job[wide][m.JOB_IDLE_GPUS.name] == 3
    assert per_job[narrow][m.JOB_GPU_UTILIZATION.name] == BUSY
    assert per_job[narrow][m.JOB_IDLE_GPUS.name] == 0
    totals = next(rec for rec in records if m.SLURM_GPUS_TOTAL.name in rec)
    assert totals[m.SLURM_GPUS_TOTAL.name] == 8 * len(nodes)
    assert totals[m.SLURM_GPUS_ALLOCATED.name] == 8
    assert totals[m.SLURM_GPUS_IDLE_ALLOCATED.name] == 3
    assert totals[m.SLURM_JOBS_RUNNING.name] == 2
    assert totals[m.SLURM_JOBS_PENDING.name] == 1
    states = {rec[m.STATE]: rec[m.SLURM_NODES.name] for rec in records if m.STATE in rec}
    assert sum(states.values()) == len(nodes)
    assert states["mixed"] == len(nodes)

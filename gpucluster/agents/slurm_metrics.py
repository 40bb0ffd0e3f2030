"""Slurm metrics, every minute from a systemd timer on the head node.

Nodes by state, jobs running and pending, GPUs configured and allocated, and for every
running job its GPUs' mean utilization and how many of them sit idle. Which GPUs a job
holds comes from Slurm (slurm_jobs); their utilization is what the node collectors
published (GetMetricData on metric_names.GPU_UTILIZATION, the last period with data).
Written as EMF lines the head's CloudWatch agent ships, like the node collector's.

A CloudWatch failure costs only the per-job figures of that minute; a Slurm failure
publishes nothing, so an alarm on missing data sees it.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import emf, runtime, slurm_jobs
from gpucluster.agents import metric_names as m
from gpucluster.agents.scontrol import Runner, ScontrolError, run_command

LOG = logging.getLogger("slurm-metrics")
# GetMetricData takes at most 500 queries per call.
QUERY_BATCH = 500
# How far back a GPU's latest utilization may be: a few node periods, so one late
# shipment from a node does not make its GPUs unknown.
LOOKBACK = timedelta(minutes=5)

Gpu = tuple[str, int]


def utilization(cloudwatch: Any, cluster: str, gpus: Sequence[Gpu], now: datetime) -> dict[Gpu, float]:
    """The latest one-minute mean utilization of each of `gpus` that has one."""
    found: dict[Gpu, float] = {}
    ordered = sorted(set(gpus))
    for start in range(0, len(ordered), QUERY_BATCH):
        batch = ordered[start : start + QUERY_BATCH]
        queries = [
            {
                "Id": f"g{number}",
                "MetricStat": {
                    "Metric": {
                        "Namespace": m.namespace(cluster),
                        "MetricName": m.GPU_UTILIZATION.name,
                        "Dimensions": [{"Name": m.NODE, "Value": node}, {"Name": m.GPU, "Value": str(index)}],
                    },
                    "Period": m.PERIOD_SECONDS,
                    "Stat": "Average",
                },
                "ReturnData": True,
            }
            for number, (node, index) in enumerate(batch)
        ]
        pages = cloudwatch.get_paginator("get_metric_data").paginate(
            MetricDataQueries=queries, StartTime=now - LOOKBACK, EndTime=now, ScanBy="TimestampDescending"
        )
        for page in pages:
            for result in page["MetricDataResults"]:
                gpu = batch[int(result["Id"][1:])]
                if result["Values"] and gpu not in found:
                    found[gpu] = float(result["Values"][0])
    return found


def records(
    cluster: str,
    nodes: Sequence[slurm_jobs.NodeState],
    jobs: Sequence[slurm_jobs.Job],
    used: dict[Gpu, float] | None,
    when: datetime,
) -> list[str]:
    namespace = m.namespace(cluster)
    states = slurm_jobs.count((node.bucket for node in nodes), m.NODE_STATES)
    lines = [
        emf.record(namespace, {m.STATE: state}, [(m.SLURM_NODES, float(n))], when)
        for state, n in states.items()
    ]
    running = [job for job in jobs if job.state == "RUNNING"]
    totals: list[tuple[m.Metric, float]] = [
        (m.SLURM_JOBS_RUNNING, float(len(running))),
        (m.SLURM_JOBS_PENDING, float(sum(job.state == "PENDING" for job in jobs))),
        (m.SLURM_GPUS_TOTAL, float(sum(node.gpus for node in nodes))),
        (m.SLURM_GPUS_ALLOCATED, float(sum(node.gpus_allocated for node in nodes))),
    ]
    if used is not None:
        idle_total = 0
        for job in running:
            known = [used[gpu] for gpu in job.gpus if gpu in used]
            if not known:
                continue
            idle = sum(value < m.IDLE_GPU_PERCENT for value in known)
            idle_total += idle
            values = [
                (m.JOB_GPU_UTILIZATION, round(sum(known) / len(known), 1)),
                (m.JOB_IDLE_GPUS, float(idle)),
            ]
            lines.append(emf.record(namespace, {m.JOB: job.job_id}, values, when))
        totals.append((m.SLURM_GPUS_IDLE_ALLOCATED, float(idle_total)))
    lines.append(emf.record(namespace, {}, totals, when))
    return lines


def collect(cluster: str, cloudwatch: Any, run: Runner, now: datetime) -> list[str]:
    """This minute's EMF lines; ScontrolError when Slurm cannot be asked."""
    nodes = slurm_jobs.read_nodes(run)
    jobs = slurm_jobs.read_jobs(run)
    held = [gpu for job in jobs if job.state == "RUNNING" for gpu in job.gpus]
    used: dict[Gpu, float] | None = {}
    if held:
        try:
            used = utilization(cloudwatch, cluster, held, now)
        except (BotoCoreError, ClientError) as err:
            LOG.warning("cannot read GPU utilization, no per-job figures this minute: %s", err)
            used = None
    return records(cluster, nodes, jobs, used, now)


def run_once(cluster: str, cloudwatch: Any, run: Runner, now: datetime, output: str) -> int:
    try:
        lines = collect(cluster, cloudwatch, run, now)
    except ScontrolError as err:
        LOG.error("cannot ask Slurm, no metrics this minute: %s", err)
        return 1
    try:
        emf.append(lines, now, output)
    except OSError as err:
        LOG.error("cannot write the metric records to %s: %s", output, err)
        return 1
    LOG.info("%d metric records", len(lines))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runtime.add_common_arguments(parser)
    parser.add_argument("--output", default=emf.METRICS_LOG_DIR, help="directory the CloudWatch agent ships")
    args = parser.parse_args(argv)
    runtime.configure_logging(args.verbose)
    try:
        settings = runtime.Settings(args, os.environ)
        cluster, region = settings.cluster(), settings.region()
    except runtime.SettingError as err:
        LOG.error("%s", err)
        return 2
    return run_once(
        cluster, runtime.client("cloudwatch", region), run_command, datetime.now(UTC), args.output
    )


if __name__ == "__main__":
    sys.exit(main())

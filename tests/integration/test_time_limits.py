"""Partition time limits against the real controller, with a Capacity Block's end
reservation in place: a job submitted without --time gets the partition's DefaultTime
and starts, one whose limit reaches into the reservation waits for it, and one over
the partition's MaxTime waits with PartitionTimeLimit.

Before DefaultTime existed, a job without --time had an INFINITE limit, overlapped
the reservation and never started."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpucluster.agents import maintenance
from gpucluster.config.slurm_time import format_minutes, parse_minutes
from tests.integration.cluster import SlurmCluster
from tests.integration.host import wait_for

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 30
# Settle time for the scheduler to give a pending job its reason (sched_interval=2 s).
REASON_TIMEOUT = 20


def _sbatch(cluster: SlurmCluster, *args: str) -> str:
    result = cluster.slurm(
        "sbatch", "--parsable", f"--chdir={cluster.root / 'jobs'}", "--output=/dev/null", *args
    )
    return result.stdout.strip().split(";")[0]


def _reason(cluster: SlurmCluster, job_id: str, expected: str) -> dict[str, str]:
    def probe() -> dict[str, str] | None:
        info = cluster.job_info(job_id)
        return info if info["JobState"] == "PENDING" and expected in info["Reason"] else None

    return wait_for(f"job {job_id} PENDING with reason {expected}", probe, REASON_TIMEOUT)


def test_partition_limits_are_the_rendered_ones(cluster: SlurmCluster):
    group = cluster.group
    for name in (group.name, "all"):
        part = cluster.show("partition", name)
        assert parse_minutes(part["DefaultTime"], "DefaultTime") == group.default_time
        assert parse_minutes(part["MaxTime"], "MaxTime") == group.max_time_minutes


def test_job_without_time_starts_before_a_maintenance_reservation(cluster: SlurmCluster):
    group = cluster.group
    now = datetime.now(UTC).replace(microsecond=0)
    # The window opens after DefaultTime (60 minutes) but before a 2-hour job would end.
    start = now + timedelta(minutes=group.default_time + 30)
    end = start + timedelta(minutes=30)
    reservation = maintenance.reservation_name(group.name)
    cluster.slurm(*maintenance.reservation_command(group.name, start, end))
    try:
        record = cluster.show("reservation", reservation)
        assert "MAINT" in record["Flags"].split(",")

        plain = _sbatch(cluster, "--wrap", "hostname")
        crossing = _sbatch(cluster, f"--time={format_minutes(group.default_time + 60)}", "--wrap", "hostname")
        too_long = _sbatch(
            cluster,
            f"--partition={group.name}",
            f"--time={format_minutes(group.max_time_minutes + 1440)}",
            "--wrap",
            "hostname",
        )

        done = cluster.wait_job_state(plain, {"COMPLETED"}, JOB_TIMEOUT)
        assert parse_minutes(done["TimeLimit"], "TimeLimit") == group.default_time
        assert "ReqNodeNotAvail" in _reason(cluster, crossing, "ReqNodeNotAvail")["Reason"]
        assert _reason(cluster, too_long, "PartitionTimeLimit")["Reason"] == "PartitionTimeLimit"
    finally:
        cluster.slurm("scancel", "--user=root")
        cluster.slurm("scontrol", "delete", f"Reservation={reservation}", check=False)

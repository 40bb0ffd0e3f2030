"""Accounting on the real cluster (issue 27): job records with their GPUs and elapsed time in
sacct, a user outside every account refused, and no record lost while slurmdbd is down or
slurmctld restarts."""

from __future__ import annotations

import dataclasses
import pwd
import re

import pytest

from gpucluster.agents.accounts import Account, Qos
from tests.integration.accounting import SuiteAccounting
from tests.integration.accounting_daemons import (
    ACCOUNT_USER,
    DB_USER,
    MARIADB_PORT,
    OUTSIDER,
    SUITE_ACCOUNT,
    database_ca,
)
from tests.integration.cluster import SlurmCluster
from tests.integration.host import run, wait_for

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 60
# slurmctld sends a finished job's record at once when slurmdbd is up; when it was down, its
# agent retries and drains its queue on reconnection.
RECORD_TIMEOUT = 60
SACCT_FIELDS = "JobID,User,Account,State,ElapsedRaw,AllocTRES"
# A system user no suite account lists, for the agent's test.
EXTRA_USER = "sys"


def as_user(name: str) -> list[str]:
    user = pwd.getpwnam(name)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


def submit_as(cluster: SlurmCluster, user: str, *args: str, check: bool = True):
    return cluster.slurm(
        *as_user(user), "sbatch", "--parsable", "--chdir=/tmp", "--output=/dev/null", *args, check=check
    )


def records(cluster: SlurmCluster, job_ids: list[str]) -> dict[str, dict[str, str]]:
    """sacct's allocation records (no steps) of `job_ids` that slurmdbd holds, by job id."""
    result = cluster.slurm(
        "sacct",
        "-n",
        "-P",
        "-X",
        "-a",
        f"--jobs={','.join(job_ids)}",
        f"--format={SACCT_FIELDS}",
        check=False,
    )
    found = {}
    for line in result.stdout.splitlines():
        values = dict(zip(SACCT_FIELDS.split(","), line.split("|"), strict=True))
        found[values["JobID"]] = values
    return found


def wait_completed_records(cluster: SlurmCluster, job_ids: list[str]) -> dict[str, dict[str, str]]:
    def probe() -> dict[str, dict[str, str]] | None:
        found = records(cluster, job_ids)
        complete = all(found.get(job, {}).get("State") == "COMPLETED" for job in job_ids)
        return found if complete else None

    return wait_for(f"sacct to show jobs {job_ids} COMPLETED", probe, timeout=RECORD_TIMEOUT)


def test_sacct_shows_a_jobs_gpus_and_elapsed_time(cluster: SlurmCluster):
    job = submit_as(cluster, ACCOUNT_USER, "--gpus=2", "--wrap=sleep 2").stdout.strip()
    cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
    record = wait_completed_records(cluster, [job])[job]
    assert record["User"] == ACCOUNT_USER and record["Account"] == SUITE_ACCOUNT, record
    assert "gres/gpu=2" in record["AllocTRES"].split(","), record
    assert int(record["ElapsedRaw"]) >= 2, record
    usage = account_gpu_seconds(cluster, SUITE_ACCOUNT)
    assert usage >= 2 * int(record["ElapsedRaw"]), usage


def account_gpu_seconds(cluster: SlurmCluster, account: str) -> int:
    """The account's GPU time today, from `sreport job SizesByAccount`, which sums job records
    (sreport's cluster reports read the hourly rollup, which covers only finished hours)."""
    report = cluster.slurm(
        "sreport",
        "-n",
        "-P",
        "-t",
        "seconds",
        "-T",
        "gres/gpu",
        "job",
        "SizesByAccount",
        "start=now-1days",
        "end=now+1hours",
        f"accounts={account}",
        "grouping=100000",
    ).stdout
    print(report)
    rows = [line.split("|") for line in report.splitlines() if line.split("|")[1:2] == [account]]
    assert len(rows) == 1, report
    return int(rows[0][2])


def test_a_user_outside_every_account_is_refused(cluster: SlurmCluster):
    refused = submit_as(cluster, OUTSIDER, "--wrap=true", check=False)
    assert refused.returncode != 0
    assert "Invalid account or account/partition combination specified" in refused.stderr, refused.stderr


def test_no_record_is_lost_while_slurmdbd_is_down(cluster: SlurmCluster, slurm_accounting: SuiteAccounting):
    slurm_accounting.slurmdbd.stop()
    try:
        jobs = [
            submit_as(cluster, ACCOUNT_USER, "--gpus=1", "--wrap=sleep 1").stdout.strip() for _ in range(3)
        ]
        for job in jobs:
            cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
        # slurmctld holds the records in its agent queue meanwhile.
        queued = cluster.slurm("sdiag").stdout
        assert re.search(r"DBD Agent queue size:\s*[1-9]", queued), queued
    finally:
        slurm_accounting.slurmdbd.start()
    found = wait_completed_records(cluster, jobs)
    assert all("gres/gpu=1" in found[job]["AllocTRES"].split(",") for job in jobs), found
    wait_for(
        "slurmctld's agent queue to drain",
        lambda: re.search(r"DBD Agent queue size:\s*0\b", cluster.slurm("sdiag").stdout),
        timeout=RECORD_TIMEOUT,
    )


def test_records_survive_a_controller_restart(cluster: SlurmCluster):
    job = submit_as(cluster, ACCOUNT_USER, "--gpus=1", "--wrap=true").stdout.strip()
    cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
    before = wait_completed_records(cluster, [job])
    cluster.stop_controller(hard=False)
    cluster.start_controller()
    for name in cluster.nodes:
        cluster.wait_node_state(name, lambda s: "NOT_RESPONDING" not in s, "to answer", 60)
    assert records(cluster, [job]) == before
    after = submit_as(cluster, ACCOUNT_USER, "--wrap=true").stdout.strip()
    cluster.wait_job_state(after, {"COMPLETED"}, JOB_TIMEOUT)
    assert wait_completed_records(cluster, [after])[after]["Account"] == SUITE_ACCOUNT


def test_the_heads_accounts_agent_is_idempotent_and_removes_what_the_config_dropped(
    slurm_accounting: SuiteAccounting,
):
    """gpucluster.agents.accounts on the real slurmdbd: the state it applied at start needs
    nothing more; an account, user and QOS added to the config appear, and go once the
    config drops them again; an account an administrator made by hand stays."""
    state = slurm_accounting.state
    assert not slurm_accounting.apply(state)
    cluster = state.cluster
    slurm_accounting.run_command(["sacctmgr", "-i", "add", "account", "by-hand", f"cluster={cluster}"])
    grown = dataclasses.replace(
        state,
        qos=(*state.qos, Qos(name="extra", max_jobs_per_user=2)),
        accounts=(*state.accounts, Account("team-b", 1, ("extra",), "extra", (EXTRA_USER,))),
        default_accounts={**state.default_accounts, EXTRA_USER: "team-b"},
    )
    try:
        assert slurm_accounting.apply(grown)
        assert f"team-b|{EXTRA_USER}|extra" in associations(slurm_accounting, cluster)
        assert "extra|2" in slurm_accounting.sacctmgr_show("qos", "format=name,maxjobspu")
        assert not slurm_accounting.apply(grown)
    finally:
        slurm_accounting.apply(state)
    left = associations(slurm_accounting, cluster)
    assert not [row for row in left if row.startswith("team-b|") or f"|{EXTRA_USER}|" in row], left
    assert "by-hand||normal" in left, "an account gpucluster did not make is never removed"
    assert "extra" not in {row.split("|")[0] for row in slurm_accounting.sacctmgr_show("qos", "format=name")}
    slurm_accounting.run_command(["sacctmgr", "-i", "delete", "account", "by-hand", f"cluster={cluster}"])


def associations(slurm_accounting: SuiteAccounting, cluster: str) -> list[str]:
    return slurm_accounting.sacctmgr_show("association", f"cluster={cluster}", "format=account,user,qos")


def test_the_database_takes_tls_connections_only_and_slurmdbd_uses_one(slurm_accounting: SuiteAccounting):
    """As the cluster's RDS parameter group does (require_secure_transport): slurmdbd's user
    and password are refused over plain TCP (MariaDB 10.11 says "Access denied") and taken
    over TLS checked against the CA, as slurmdbd connects (StorageParameters=SSL_CA=...)."""
    mariadb = slurm_accounting.mariadb
    login = ["mariadb", "--no-defaults", "-h", "127.0.0.1", "-P", str(MARIADB_PORT), "-u", DB_USER]
    login.append(f"-p{mariadb.password}")
    plain = run(*login, "--skip-ssl", "-e", "SELECT 1", check=False)
    assert plain.returncode != 0 and "Access denied" in plain.stderr, plain.stderr
    ca = database_ca(slurm_accounting.root)
    tls = run(*login, f"--ssl-ca={ca}", "-N", "-e", "SHOW STATUS LIKE 'Ssl_version'")
    assert tls.stdout.split()[1].startswith("TLS"), tls.stdout
    assert slurm_accounting.sacctmgr_show("cluster", "format=cluster")

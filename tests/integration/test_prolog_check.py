"""The health check as Slurm's Prolog on real daemons: it runs before every job, and a node
whose GPUs fail it (or whose probe hangs) is drained with a `prolog:` reason naming the probe
while the job is requeued, unheld, onto a healthy node."""

from __future__ import annotations

import statistics
import subprocess
import time

import pytest

from tests.integration.cluster import SlurmCluster
from tests.integration.host import wait_for
from tests.integration.queries import node_states

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 60
# The Prolog's nvidia-smi bound (ProbeTimeouts().nvidia_smi) and its kill grace, plus the
# drain and Slurm's own round trips.
HANG_DRAIN_TIMEOUT = 12 + 1 + 30


def prolog_calls(cluster: SlurmCluster) -> list[tuple[str, str]]:
    calls = cluster.gpu_override_dir / "prolog-calls"
    if not calls.exists():
        return []
    return [tuple(line.split()) for line in calls.read_text().splitlines()]  # type: ignore[misc]


def test_prolog_runs_before_each_job_on_each_of_its_nodes(cluster: SlurmCluster):
    job = cluster.submit(
        "--nodes=2", "--gpus-per-node=1", "--cpus-per-task=1", "--output=/dev/null", script="true\n"
    )
    done = cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
    assert done["ExitCode"] == "0:0"
    assert sorted(node for job_id, node in prolog_calls(cluster) if job_id == job) == sorted(cluster.nodes)


def test_prolog_on_a_healthy_node_takes_milliseconds(cluster: SlurmCluster):
    """The rendered Prolog as slurmd runs it (its environment, the suite's stand-in tools):
    it runs before every job, so its own cost must stay small."""
    node = sorted(cluster.nodes)[0]
    env = {"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURMD_NODENAME": node, "SLURM_JOB_ID": "1"}
    runs = []
    for _ in range(5):
        started = time.monotonic()
        subprocess.run([cluster.site.healthcheck_program], env=env, check=True, capture_output=True)
        runs.append((time.monotonic() - started) * 1000)
    median = statistics.median(runs)
    print(f"Prolog on a healthy node: median {median:.0f} ms of {[round(r) for r in runs]}")
    assert median < 2000, runs


def _requeued_onto_the_healthy_node(
    cluster: SlurmCluster, sick: str, healthy: str, reason: str, timeout: float
):
    # The healthy node is busy, so the job is placed on the sick one, whose Prolog fails.
    blocker = cluster.submit(
        f"--nodelist={healthy}",
        "--gpus-per-node=8",
        "--cpus-per-task=1",
        "--output=/dev/null",
        script="sleep 300\n",
    )
    cluster.wait_job_state(blocker, {"RUNNING"}, JOB_TIMEOUT)
    out = cluster.root / "jobs" / f"prolog-requeue-{time.monotonic_ns()}.out"
    job = cluster.submit(
        "--requeue",
        "--gpus-per-node=8",
        "--cpus-per-task=1",
        f"--output={out}",
        script='echo "ran on $SLURMD_NODENAME"\n',
    )
    info = cluster.wait_node_state(sick, lambda s: "DRAIN" in s, "to be drained by the Prolog", timeout)
    assert info["Reason"].startswith(reason), info["Reason"]
    requeued = wait_for(
        f"job {job} to be requeued",
        lambda: (lambda i: i if i["JobState"] == "PENDING" and i.get("Restarts") == "1" else None)(
            cluster.job_info(job)
        ),
        JOB_TIMEOUT,
    )
    # nohold_on_prolog_fail: pending for resources, not held (Priority=0, "launch failed requeued held").
    assert requeued["Priority"] != "0", requeued
    assert "held" not in requeued.get("Reason", "").lower(), requeued
    cluster.slurm("scancel", blocker)
    done = cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
    assert done["NodeList"] == healthy
    assert out.read_text().strip().endswith(f"ran on {healthy}")
    return job


def _cleanup(cluster: SlurmCluster, sick: str) -> None:
    (cluster.gpu_override_dir / f"{sick}.prolog").unlink(missing_ok=True)
    cluster.slurm("scancel", "--user=root")
    cluster.slurm("scontrol", "update", f"NodeName={sick}", "State=RESUME")
    cluster.wait_node_state(sick, lambda s: "IDLE" in s and "DRAIN" not in s, "to resume", JOB_TIMEOUT)


def test_failing_prolog_drains_the_node_and_the_job_runs_on_another(cluster: SlurmCluster):
    sick, healthy = sorted(cluster.nodes)
    (cluster.gpu_override_dir / f"{sick}.prolog").write_text("7\n")
    try:
        _requeued_onto_the_healthy_node(cluster, sick, healthy, "prolog: GPU count 7, want 8", JOB_TIMEOUT)
        # The periodic health check sees 8 GPUs and leaves the Prolog's reason alone.
        assert cluster.node_info(sick)["Reason"].startswith("prolog: GPU count 7, want 8")
        assert "DRAIN" not in node_states(cluster.node_info(healthy))
    finally:
        _cleanup(cluster, sick)


def test_hung_prolog_probe_drains_naming_the_probe_within_its_bound(cluster: SlurmCluster):
    sick, healthy = sorted(cluster.nodes)
    (cluster.gpu_override_dir / f"{sick}.prolog").write_text("hang\n")
    try:
        started = time.monotonic()
        _requeued_onto_the_healthy_node(
            cluster, sick, healthy, "prolog: nvidia-smi -L hung (no answer in 12 s)", HANG_DRAIN_TIMEOUT
        )
        print(
            f"hung Prolog probe: drained and the job done on {healthy} in {time.monotonic() - started:.1f} s"
        )
    finally:
        _cleanup(cluster, sick)

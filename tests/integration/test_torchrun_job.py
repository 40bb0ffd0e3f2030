"""The rendered torchrun job on real Slurm: 2 nodes x 2 CPU processes over gloo.

One launcher per node, four ranks with distinct RANK/LOCAL_RANK around one rendezvous
endpoint; then the reference trainer requeued mid-run (`scontrol requeue`) ends with the
weights of an uninterrupted run. Needs torch (`pip install torch==2.13.0`, the CPU build)
and, for the trainer, gpucluster.train.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from gpucluster.jobs.validation import job_path
from gpucluster.launch.torchrun import JOB, torchrun_files
from gpucluster.resolved import resolve
from tests.integration.cluster import SlurmCluster
from tests.integration.host import wait_for
from tests.integration.prerequisites import unavailable

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 240
PROCS_PER_NODE = 2
# The session nodes have 2 CPUs, not the group's; one thread per rank keeps 2 ranks on 2 CPUs.
NODE_CPUS = 2
# The nodes sit in network namespaces whose interface is eth0: gloo would otherwise bind the
# address the host's name resolves to, which no namespace holds (production resolves its own).
NETNS_INTERFACE = "eth0"
DONE = re.compile(r"^gpucluster-train done step=(\d+) weights-sha256=([0-9a-f]{64})$", re.MULTILINE)
# Long enough that the requeue lands between the first checkpoint and the end.
TRAIN_ARGS = ("--steps", "400", "--save-every", "20", "--micro-batch", "4", "--accum", "2", "--seed", "7")

PROBE = """
import os, socket
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
total = torch.tensor([1.0])
dist.all_reduce(total)
keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID")
fields = " ".join(f"{key}={os.environ[key]}" for key in keys)
line = f"node={os.environ['SLURMD_NODENAME']} {fields} sum={int(total.item())}"
# One file per rank: ranks printing at once into the job's output can share a line.
with open(os.path.join(os.environ["PROBE_DIR"], f"rank-{os.environ['RANK']}"), "w") as out:
    out.write(line)
dist.destroy_process_group()
"""


def _missing(*modules: str) -> str | None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            return module
    return None


def require(*modules: str) -> None:
    missing = _missing(*modules)
    if missing == "torch":
        unavailable(
            "run the torchrun job",
            "torch is not importable here: pip install torch==2.13.0 (the CPU build) into the venv",
        )
    if missing is not None:
        unavailable(
            "run the torchrun job",
            f"{missing} is not importable here: the reference trainer is not in this tree",
        )


@pytest.fixture
def job(cluster: SlurmCluster) -> Path:
    """The group's torchrun job rendered for the session cluster, as a login node installs it."""
    target = cluster.root / "training" / job_path(cluster.group.name, JOB).lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        torchrun_files(resolve(cluster.cfg), cluster.install_node_lib())[job_path(cluster.group.name, JOB)]
    )
    return target


def launcher_env(cluster: SlurmCluster) -> dict[str, str]:
    """What every torchrun job here runs with: 2 processes per 2-CPU node, one thread each,
    gloo on the namespaces' interface."""
    return {
        **cluster.env,
        "PATH": ":".join([str(cluster.root / "bin"), os.environ["PATH"]]),
        "TRAIN_NPROC_PER_NODE": str(PROCS_PER_NODE),
        "OMP_NUM_THREADS": "1",
        "GLOO_SOCKET_IFNAME": NETNS_INTERFACE,
    }


def sbatch(cluster: SlurmCluster, script: Path, submit_dir: Path, *args: str, env: dict[str, str]) -> str:
    """sbatch SCRIPT as a user would; the command line (over the #SBATCH lines) sizes the
    launcher to the 2-CPU test nodes, as tests/integration/test_validation_jobs.py does."""
    submit_dir.mkdir(parents=True)
    result = cluster.slurm(
        "sbatch",
        "--parsable",
        f"--chdir={submit_dir}",
        "--ntasks-per-node=1",
        f"--cpus-per-task={NODE_CPUS}",
        str(script),
        *args,
        env=env,
    )
    return result.stdout.strip().split(";")[0]


def submit(
    cluster: SlurmCluster, script: Path, name: str, *args: str, env: dict[str, str]
) -> tuple[str, Path]:
    submit_dir = cluster.root / "submit" / f"{name}-{os.getpid()}"
    base = launcher_env(cluster)
    full_env = {
        **base,
        # torchrun and the trainer come from this venv on every node (one file system here),
        # not from an environment the job builds.
        "PATH": f"{Path(sys.executable).parent}:{base['PATH']}",
        "TRAIN_VENV": "",
        **env,
    }
    return sbatch(cluster, script, submit_dir, *args, env=full_env), submit_dir


def finished(cluster: SlurmCluster, job_id: str, submit_dir: Path) -> tuple[dict[str, str], str]:
    info = cluster.wait_job_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, JOB_TIMEOUT)
    outputs = list(submit_dir.glob("*.out"))
    return info, outputs[0].read_text() if outputs else ""


def test_one_launcher_per_node_and_four_ranks_around_one_rendezvous(cluster, job):
    require("torch")
    probe = cluster.root / "probe.py"
    probe.write_text(PROBE)
    probe_dir = cluster.root / f"probe-{os.getpid()}"
    probe_dir.mkdir()
    job_id, submit_dir = submit(cluster, job, "probe", str(probe), env={"PROBE_DIR": str(probe_dir)})
    info, out = finished(cluster, job_id, submit_dir)
    assert info["JobState"] == "COMPLETED", out
    launchers = re.findall(r"launcher node=(\S+) node_rank=(\d) nproc=(\d+) rendezvous=(\S+)", out)
    assert sorted(node for node, *_ in launchers) == sorted(cluster.nodes), out
    assert {nproc for _, _, nproc, _ in launchers} == {str(PROCS_PER_NODE)}
    # One endpoint: the address of the allocation's first node (Slurm's order, node rank 0).
    endpoints = {endpoint for *_, endpoint in launchers}
    first = next(node for node, rank, *_ in launchers if rank == "0")
    assert endpoints == {f"{cluster.nodes[first].address}:29500"}, launchers
    ranks = [dict(field.split("=", 1) for field in path.read_text().split()) for path in probe_dir.iterdir()]
    assert len(ranks) == 4, (sorted(probe_dir.iterdir()), out)
    assert sorted(int(rank["RANK"]) for rank in ranks) == [0, 1, 2, 3]
    assert {rank["WORLD_SIZE"] for rank in ranks} == {"4"} and {rank["sum"] for rank in ranks} == {"4"}
    for node in cluster.nodes:
        local = sorted(int(rank["LOCAL_RANK"]) for rank in ranks if rank["node"] == node)
        assert local == [0, 1], (node, ranks)
    assert {rank["TORCHELASTIC_RUN_ID"] for rank in ranks} == {job_id}
    assert len({(rank["MASTER_ADDR"], rank["MASTER_PORT"]) for rank in ranks}) == 1


def _train(cluster: SlurmCluster, job: Path, name: str) -> tuple[str, Path, Path]:
    checkpoints = cluster.root / "checkpoints" / f"{name}-{os.getpid()}"
    command = ("-m", "gpucluster.train", "--checkpoint-dir", str(checkpoints), *TRAIN_ARGS)
    job_id, submit_dir = submit(cluster, job, name, *command, env={"TRAIN_CHECKPOINT_DIR": str(checkpoints)})
    return job_id, submit_dir, checkpoints


# The uninterrupted run's end, computed once per session: both resume tests compare with it.
_WHOLE: dict[str, list[tuple[str, str]]] = {}


def uninterrupted(cluster: SlurmCluster, job: Path) -> list[tuple[str, str]]:
    if "done" not in _WHOLE:
        job_id, submit_dir, _ = _train(cluster, job, "whole")
        info, out = finished(cluster, job_id, submit_dir)
        assert info["JobState"] == "COMPLETED", out
        done = DONE.findall(out)
        assert len(done) == 1 and done[0][0] == TRAIN_ARGS[1], out
        _WHOLE["done"] = done
    return _WHOLE["done"]


def _interrupted(cluster: SlurmCluster, job: Path, name: str) -> tuple[str, Path]:
    """A training job caught mid-run: a verified checkpoint (its manifest is written last)
    exists and the job still runs."""
    job_id, submit_dir, checkpoints = _train(cluster, job, name)
    wait_for("the first checkpoint", lambda: list(checkpoints.glob("step-*.json")) or None, JOB_TIMEOUT)
    assert cluster.job_info(job_id)["JobState"] == "RUNNING"
    return job_id, submit_dir


def _resumed(cluster: SlurmCluster, job_id: str, submit_dir: Path) -> str:
    info, out = finished(cluster, job_id, submit_dir)
    assert info["JobState"] == "COMPLETED", out
    assert info["Restarts"] == "1", info
    # --open-mode=append keeps both runs' output: two launchers each, one end.
    assert out.count("launcher node=") == 4, out
    return out


def test_a_requeued_run_resumes_to_the_uninterrupted_weights(cluster, job):
    require("torch", "gpucluster.train")
    whole = uninterrupted(cluster, job)
    job_id, submit_dir = _interrupted(cluster, job, "requeued")
    cluster.slurm("scontrol", "requeue", job_id)
    out = _resumed(cluster, job_id, submit_dir)
    assert DONE.findall(out) == whole, out


def test_usr1_before_the_time_limit_checkpoints_requeues_and_resumes(cluster, job):
    require("torch", "gpucluster.train")
    whole = uninterrupted(cluster, job)
    job_id, submit_dir = _interrupted(cluster, job, "usr1")
    # What --signal=B:USR1@N does at the time limit: USR1 to the batch shell alone.
    cluster.slurm("scancel", "--batch", "--signal=USR1", job_id)
    out = _resumed(cluster, job_id, submit_dir)
    assert "the time limit is near; asking every rank to save a checkpoint and exit" in out
    assert f"requeueing job {job_id}" in out
    assert DONE.findall(out) == whole, out

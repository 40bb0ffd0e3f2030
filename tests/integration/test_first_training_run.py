"""The first training run as README's "Your first training run" gives it, on real Slurm: a fresh
cluster and `sbatch torchrun.sbatch` with no arguments.

The job builds its Python environment (gpucluster.launch.node_lib's pins: torch and pydantic)
under <FSx>/<user>/.gpucluster, runs the reference trainer from the node's copy of it to its done
line, and a second job reuses the environment. The test nodes have no route to PyPI, so a
wheelhouse made once from this machine's package index stands in for it (PIP_NO_INDEX,
PIP_FIND_LINKS); the sbatch command line sizes the launcher to the 2-CPU test nodes, as every
torchrun test here does.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.jobs.validation import job_path
from gpucluster.launch.node_lib import python_requirements
from gpucluster.launch.torchrun import JOB
from gpucluster.resolved import resolve
from tests.integration.cluster import SlurmCluster
from tests.integration.prerequisites import unavailable
from tests.integration.test_torchrun_job import DONE, launcher_env, sbatch
from tests.jobs.rendered import torchrun_of

pytestmark = pytest.mark.slurm

# The environment's build (about 25 s here) plus training on 2 CPUs per node.
JOB_TIMEOUT = 420
STEPS = 20
WHEELHOUSE_CACHE = Path("/var/tmp/gpucluster-test-wheels")


def _python() -> Path:
    """The interpreter the job builds its environment with: this Python's base install (bound
    into the Debian 13 root at the same path), as /usr/bin/python3 is on a node."""
    return Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture(scope="session")
def wheelhouse(slurm_cluster: SlurmCluster) -> Path:
    requirements = python_requirements(resolve(slurm_cluster.cfg))
    key = hashlib.sha256("\n".join([str(_python()), *requirements]).encode()).hexdigest()[:12]
    target = WHEELHOUSE_CACHE / key
    if (target / ".complete").exists():
        return target
    partial = WHEELHOUSE_CACHE / f".{key}.{os.getpid()}"
    result = subprocess.run(
        [
            str(_python()),
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            "-d",
            str(partial),
            *requirements,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        unavailable(
            "build the training environment", f"pip download {' '.join(requirements)}: {result.stderr[-400:]}"
        )
    (partial / ".complete").touch()
    partial.rename(target)
    return target


def _submit(cluster: SlurmCluster, script: Path, submit_dir: Path, wheelhouse: Path) -> str:
    env = {
        **launcher_env(cluster),
        "HOME": str(cluster.root / "home" / "root"),
        "USER": "root",
        "TRAIN_PYTHON": str(_python()),
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        "PIP_NO_CACHE_DIR": "1",
        "TRAIN_STEPS": str(STEPS),
    }
    return sbatch(cluster, script, submit_dir, env=env)


def _output(cluster: SlurmCluster, job_id: str, submit_dir: Path) -> tuple[dict[str, str], str]:
    info = cluster.wait_job_state(job_id, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, JOB_TIMEOUT)
    outputs = list(submit_dir.glob("*.out"))
    return info, outputs[0].read_text() if outputs else ""


@pytest.mark.long("trains the reference model to the end on CPU: 50-63 s beside the other worker")
def test_sbatch_with_no_arguments_trains_the_reference_model_to_the_end(
    cluster: SlurmCluster, wheelhouse: Path
):
    fsx = cluster.root / "fsx"
    fsx.mkdir(exist_ok=True)
    fsx_config = cluster.cfg.storage.fsx_lustre
    assert fsx_config is not None, "the default example has FSx for Lustre"
    storage = cluster.cfg.storage.model_copy(
        update={"fsx_lustre": fsx_config.model_copy(update={"mount_point": str(fsx)})}
    )
    cfg = cluster.cfg.model_copy(update={"storage": storage})
    script = cluster.root / "first-run" / job_path(cluster.group.name, JOB).lstrip("/")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(torchrun_of(cfg, cluster.group, cluster.install_node_lib(cfg)))
    environments = fsx / "root" / ".gpucluster"

    first_dir = cluster.root / "first-run" / f"submit-{os.getpid()}"
    job_id = _submit(cluster, script, first_dir, wheelhouse)
    info, out = _output(cluster, job_id, first_dir)
    assert info["JobState"] == "COMPLETED", out
    built = [path for path in environments.iterdir() if path.name.startswith("python-torch")]
    assert len(built) == 1, (list(environments.iterdir()), out)
    assert f"building the Python environment {built[0]}, once" in out
    done = DONE.findall(out)
    assert len(done) == 1 and done[0][0] == str(STEPS), out
    checkpoints = fsx / "root" / "checkpoints" / f"{JOB}-{cluster.group.name}-{job_id}"
    assert (checkpoints / f"step-{STEPS:08d}.pt").is_file(), out

    again_dir = cluster.root / "first-run" / f"again-{os.getpid()}"
    again = _submit(cluster, script, again_dir, wheelhouse)
    info, out = _output(cluster, again, again_dir)
    assert info["JobState"] == "COMPLETED", out
    assert f"Python environment {built[0]}\n" in out and "building the Python environment" not in out
    assert DONE.findall(out) == [(str(STEPS), done[0][1])], out

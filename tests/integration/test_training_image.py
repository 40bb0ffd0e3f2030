"""The training image on real Slurm: with software.training_image set, the import job writes
the squashfs and the nccl-tests and torchrun jobs, submitted as a user would, run in that very
file; pointed at a squashfs not imported yet, they fail at once and say to run the import job.

Pyxis is not loaded by these test nodes, so a stand-in `srun` first on the job's PATH plays its
part: it records each --container-image, refuses a squashfs path that is not there (as Pyxis
would, once the tasks start) and runs the step on the host with the real srun, one task per
node (the test nodes have 2 CPUs, not one per GPU rank)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpucluster.config import ClusterConfig
from gpucluster.jobs.validation import import_job_path, job_files, job_path, render_import_image
from gpucluster.launch.torchrun import JOB as TORCHRUN_JOB
from gpucluster.launch.torchrun import torchrun_files
from gpucluster.names import training_squashfs
from gpucluster.resolved import resolve
from tests.integration.cluster import SlurmCluster
from tests.integration.test_import_image import ENROOT, SUDO, _executable
from tests.integration.test_validation_jobs import expected_efa_devices, finished, submit
from tests.integration.validation_stubs import write_stubs

pytestmark = pytest.mark.slurm

IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com#train:v1"

PYXIS_SRUN = """#!/bin/bash
# Test stand-in for srun with the Pyxis plugin (see the module docstring).
set -euo pipefail
options=()
while (($#)) && [[ "$1" == -* ]]; do
  case "$1" in
    --container-image=*)
      image="${{1#*=}}"
      printf '%s\\n' "${{image}}" >>"{record}"
      if [[ "${{image}}" == [./]* && ! -f "${{image}}" ]]; then
        echo "stand-in pyxis: ${{image}}: no such squashfs file" >&2
        exit 1
      fi
      ;;
    --container-mounts=* | --container-workdir=* | --mpi=*) ;;
    --ntasks-per-node=*) options+=(--ntasks-per-node=1) ;;
    *) options+=("$1") ;;
  esac
  shift
done
exec {srun} "${{options[@]}}" "$@"
"""
# Stands in for torchrun in the launchers: records that it ran, and where.
TORCHRUN = """#!/bin/bash
printf '%s %s\\n' "${{SLURMD_NODENAME}}" "$*" >>"{record}"
"""


class Run:
    """One test's directory: its image directory, the stand-ins and what they recorded."""

    def __init__(self, cluster: SlurmCluster, name: str) -> None:
        base = cluster.root / "training-image"
        base.mkdir(exist_ok=True)
        self.root = base / f"{name}-{os.getpid()}-{len(list(base.iterdir()))}"
        self.images = self.root / "images"
        self.srun_record = self.root / "srun-images"
        self.torchrun_record = self.root / "torchrun-launches"
        real_srun = cluster.install.prefix / "bin" / "srun"
        assert real_srun.is_file()
        self.bin = _executable(
            self.root / "pyxis" / "srun", PYXIS_SRUN.format(record=self.srun_record, srun=real_srun)
        )
        self.torchrun = self.root / "torchrun" / "torchrun"
        _executable(self.torchrun, TORCHRUN.format(record=self.torchrun_record))
        software = cluster.cfg.software.model_copy(
            update={"training_image": IMAGE, "image_dir": str(self.images)}
        )
        self.cfg: ClusterConfig = cluster.cfg.model_copy(update={"software": software})
        self.sqsh = Path(training_squashfs(self.cfg))
        self.jobs = self.root / "jobs"
        lib_dir = cluster.install_node_lib(self.cfg)
        files = {
            **job_files(resolve(self.cfg), lib_dir),
            **torchrun_files(resolve(self.cfg), lib_dir),
            import_job_path(): render_import_image(resolve(self.cfg)),
        }
        for path, text in files.items():
            target = self.jobs / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)

    def job(self, cluster: SlurmCluster, name: str) -> Path:
        return self.jobs / job_path(cluster.group.name, name).lstrip("/")

    def images_asked_for(self) -> list[str]:
        return self.srun_record.read_text().splitlines() if self.srun_record.exists() else []


def _nccl_tests(cluster: SlurmCluster, run: Run) -> tuple[str, str]:
    stubs = write_stubs(run.root / "stubs", efa_devices=expected_efa_devices(cluster))
    job_id, submit_dir = submit(
        cluster,
        run.job(cluster, "nccl-tests"),
        "all_reduce_perf",
        path=[run.bin, stubs["tools"]],
        # The stand-in nccl-tests are not inside an image: point the job at them.
        extra_env={"NCCL_TESTS_DIR": str(stubs["nccl"])},
    )
    return finished(cluster, job_id, submit_dir)


def _torchrun(cluster: SlurmCluster, run: Run) -> tuple[str, str]:
    job_id, submit_dir = submit(
        cluster,
        run.job(cluster, TORCHRUN_JOB),
        path=[run.bin],
        extra_env={
            "TORCHRUN": str(run.torchrun),
            "TRAIN_NPROC_PER_NODE": "1",
            "TRAIN_CHECKPOINT_DIR": str(run.root / "checkpoints"),
        },
    )
    return finished(cluster, job_id, submit_dir)


def test_import_once_then_the_gate_job_runs_in_the_imported_squashfs(cluster):
    run = Run(cluster, "gate")
    assert run.sqsh == run.images / "train+v1.sqsh"
    enroot = _executable(run.root / "enroot" / "enroot", ENROOT.format(record=run.root / "enroot-args"))
    # An ECR image: the job logs in with the node's role through the root helper (sudo -n).
    _executable(run.root / "enroot" / "sudo", SUDO.format(calls=run.root / "helper-calls"))
    # The import job with no argument imports software.training_image into software.image_dir.
    job_id, submit_dir = submit(cluster, run.jobs / import_job_path().lstrip("/"), path=[enroot])
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "COMPLETED", out
    assert run.sqsh.is_file() and f"imported {IMAGE}: {run.sqsh}" in out
    assert "the nccl and torchrun jobs run in it by default (software.training_image)" in out

    state, out = _nccl_tests(cluster, run)
    assert state == "COMPLETED", out
    assert f"in container {run.sqsh} (srun, Pyxis)" in out
    # Every step (the binaries check, the -J probe, the collective) ran in the squashfs.
    asked = run.images_asked_for()
    assert len(asked) == 3 and set(asked) == {str(run.sqsh)}, asked


def test_a_gate_job_before_the_import_fails_at_once_naming_the_import_job(cluster):
    run = Run(cluster, "gate-missing")
    state, out = _nccl_tests(cluster, run)
    assert state == "FAILED", out
    assert (
        f"FAILED: container image {run.sqsh} does not exist yet; import it once first: "
        f"sbatch {import_job_path()} (then submit this job again)"
    ) in out
    # Nothing was started in the missing image.
    assert run.images_asked_for() == []


def test_the_torchrun_job_launches_in_the_imported_squashfs(cluster):
    run = Run(cluster, "torchrun")
    run.images.mkdir(parents=True)
    run.sqsh.write_text("hsqs squashfs\n")
    state, out = _torchrun(cluster, run)
    assert state == "COMPLETED", out
    assert f"launchers in container {run.sqsh} (Pyxis)" in out
    assert run.images_asked_for() == [str(run.sqsh)]
    launches = run.torchrun_record.read_text().splitlines()
    assert sorted(line.split()[0] for line in launches) == sorted(cluster.nodes), launches


def test_a_torchrun_job_before_the_import_fails_at_once_naming_the_import_job(cluster):
    run = Run(cluster, "torchrun-missing")
    state, out = _torchrun(cluster, run)
    assert state == "FAILED", out
    told = f"FAILED: container image {run.sqsh} does not exist yet; import it once first"
    assert f"{told}: sbatch {import_job_path()}" in out
    assert run.images_asked_for() == [] and not run.torchrun_record.exists()

"""With software.training_image set, the nccl and torchrun jobs run in the squashfs the
import job writes (one name, gpucluster.names.squashfs_name); explicit settings win; a job
pointed at a squashfs that is not there yet stops at once and says to run the import job.
tests/integration/test_training_image.py runs them on real Slurm."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.jobs.validation import import_job_path, job_files, render_import_image
from gpucluster.launch.torchrun import torchrun_files
from gpucluster.names import image_dir, squashfs_name, training_squashfs
from gpucluster.resolved import resolve
from tests.conftest import EXAMPLES
from tests.jobs.rendered import job_of, torchrun_of
from tests.shellcheck import assert_shellcheck_clean

ECR = "123456789012.dkr.ecr.us-east-2.amazonaws.com#train:v1"
NCCL_JOBS = ("nccl-tests", "nccl-pairwise")


def _config(
    tmp_path: Path, software: str = "", extra: str = "", example: Path = EXAMPLES[0]
) -> ClusterConfig:
    path = tmp_path / "cluster.yaml"
    path.write_text(example.read_text() + (f"software:\n{software}" if software else "") + extra)
    return load_config(path)


def _bash(script: str, snippet: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Source the rendered job (its main does not run when sourced) and run `snippet`."""
    return subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; {snippet}', script],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_the_jobs_default_to_the_squashfs_the_import_job_writes(example: Path, tmp_path: Path) -> None:
    cfg = _config(tmp_path, f"  training_image: {ECR}\n", example=example)
    fsx = cfg.storage.fsx_lustre
    assert fsx is not None
    sqsh = f"{fsx.mount_point}/containers/train+v1.sqsh"
    assert training_squashfs(cfg) == sqsh == f"{image_dir(cfg)}/{squashfs_name(ECR)}"
    # The import job writes that very file: its directory and its rendered name.
    importer = render_import_image(resolve(cfg))
    assert f'readonly DEFAULT_IMAGE_DIR="{fsx.mount_point}/containers"' in importer
    assert 'readonly DEFAULT_NAME="train+v1.sqsh"' in importer
    for group in cfg.compute_groups:
        for job in NCCL_JOBS:
            assert f'CONTAINER_IMAGE="${{NCCL_TESTS_CONTAINER-{sqsh}}}"' in job_of(cfg, group, job)
        torchrun = torchrun_of(cfg, group)
        assert f'CONTAINER_IMAGE="${{TRAIN_CONTAINER_IMAGE-{sqsh}}}"' in torchrun
        assert f"(default: {sqsh}; empty: on the host)" in torchrun


def test_without_a_training_image_the_jobs_run_on_the_host() -> None:
    cfg = load_config(EXAMPLES[0])
    group = cfg.compute_groups[0]
    assert training_squashfs(cfg) == ""
    assert 'CONTAINER_IMAGE="${NCCL_TESTS_CONTAINER-}"' in job_of(cfg, group, "nccl-tests")
    torchrun = torchrun_of(cfg, group)
    assert 'CONTAINER_IMAGE="${TRAIN_CONTAINER_IMAGE-}"' in torchrun
    assert "(default: on the host)" in torchrun


def test_image_dir_and_an_explicit_validation_image_win(tmp_path: Path) -> None:
    registry = "nvcr.io#nvidia/pytorch:25.06-py3"
    cfg = _config(
        tmp_path,
        f"  training_image: {ECR}\n  image_dir: /home/images\n",
        f"validation:\n  container_image: {registry}\n",
    )
    group = cfg.compute_groups[0]
    assert training_squashfs(cfg) == "/home/images/train+v1.sqsh"
    # validation.container_image is the nccl jobs' own setting; torchrun keeps the squashfs.
    assert f'CONTAINER_IMAGE="${{NCCL_TESTS_CONTAINER-{registry}}}"' in job_of(cfg, group, "nccl-tests")
    assert 'CONTAINER_IMAGE="${TRAIN_CONTAINER_IMAGE-/home/images/train+v1.sqsh}"' in torchrun_of(cfg, group)


def test_a_training_image_needs_a_shared_directory(tmp_path: Path) -> None:
    document = yaml.safe_load(EXAMPLES[0].read_text())
    document["storage"]["fsx_lustre"] = None
    document["software"] = {"training_image": ECR}
    config = tmp_path / "no-fsx.yaml"
    config.write_text(yaml.safe_dump(document))
    with pytest.raises(BadInput) as info:
        load_config(config)
    message = str(info.value)
    assert "software.image_dir" in message and "no shared directory for its squashfs" in message
    document["software"]["image_dir"] = "/home/images"
    config.write_text(yaml.safe_dump(document))
    assert training_squashfs(load_config(config)) == "/home/images/train+v1.sqsh"


def _job(cfg: ClusterConfig, job: str) -> str:
    group = cfg.compute_groups[0]
    return torchrun_of(cfg, group) if job == "torchrun" else job_of(cfg, group, job)


@pytest.mark.parametrize("job", [*NCCL_JOBS, "torchrun"])
def test_a_missing_squashfs_stops_the_job_and_names_the_import_job(job: str, tmp_path: Path) -> None:
    images = tmp_path / "images"
    cfg = _config(tmp_path, f"  training_image: {ECR}\n  image_dir: {images}\n")
    script = _job(cfg, job)
    sqsh = images / "train+v1.sqsh"
    missing = _bash(script, 'require_image_file "${CONTAINER_IMAGE}"')
    assert missing.returncode == 1
    assert (
        f"FAILED: container image {sqsh} does not exist yet; import it once first: "
        f"sbatch {import_job_path()} (then submit this job again)"
    ) in missing.stdout
    images.mkdir()
    sqsh.write_text("hsqs")
    assert _bash(script, 'require_image_file "${CONTAINER_IMAGE}"').returncode == 0
    # A registry reference is Pyxis's to pull; the host (empty) needs no file.
    for image in (ECR, ""):
        assert _bash(script, f"require_image_file '{image}'").returncode == 0
    relative = _bash(script, "require_image_file ./nowhere.sqsh")
    assert relative.returncode == 1 and "./nowhere.sqsh does not exist yet" in relative.stdout


@pytest.mark.parametrize(
    ("job", "variable"), [("nccl-tests", "NCCL_TESTS_CONTAINER"), ("torchrun", "TRAIN_CONTAINER_IMAGE")]
)
def test_the_sbatch_time_variable_wins_and_empty_means_the_host(
    job: str, variable: str, tmp_path: Path
) -> None:
    cfg = _config(tmp_path, f"  training_image: {ECR}\n  image_dir: /home/images\n")
    script = _job(cfg, job)
    show = 'printf "%s\\n" "${CONTAINER_IMAGE}"'
    assert _bash(script, show).stdout == "/home/images/train+v1.sqsh\n"
    assert _bash(script, show, {variable: "/fsx/other.sqsh"}).stdout == "/fsx/other.sqsh\n"
    assert _bash(script, show, {variable: ""}).stdout == "\n"


def test_the_nccl_jobs_look_for_nccl_tests_where_the_recipe_builds_them(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    (images / "train+v1.sqsh").write_text("hsqs")
    cfg = _config(tmp_path, f"  training_image: {ECR}\n  image_dir: {images}\n")
    result = _bash(
        job_of(cfg, cfg.compute_groups[0], "nccl-tests"),
        'find_nccl_tests; echo "${NCCL_BIN_DIR}"',
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[-1] == "/opt/nccl-tests/build"
    assert f"in container {images}/train+v1.sqsh" in result.stdout


def test_jobs_with_a_training_image_pass_shellcheck(tmp_path: Path) -> None:
    cfg = _config(tmp_path, f"  training_image: {ECR}\n")
    assert_shellcheck_clean({**job_files(resolve(cfg)), **torchrun_files(resolve(cfg))}, tmp_path / "jobs")

"""The import-image job: rendered once per cluster beside the validation jobs, it names the
squashfs after the image (the name gpucluster.names.squashfs_name renders; its shell copy for
an image given on the command line agrees with it), takes its directory from the config, and
refuses to run without an image or a directory. tests/integration/test_import_image.py runs
it on real Slurm."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucluster.config.loader import load_config
from gpucluster.config.software import SoftwareConfig
from gpucluster.gate.jobs import IMPORT_JOB, TIME_LIMITS, WAITS, import_job_path, render_import_image
from gpucluster.names import squashfs_name
from tests.conftest import EXAMPLES
from tests.test_validation_jobs import directives

ECR = "123456789012.dkr.ecr.us-east-2.amazonaws.com#train:v1"


def _with_software(tmp_path: Path, extra: str) -> Path:
    config = tmp_path / "cluster.yaml"
    config.write_text(EXAMPLES[0].read_text() + "software:\n" + extra)
    return config


def _bash(
    script: str, snippet: str, env: dict[str, str] | None = None, extra: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Source the rendered job (its main does not run when sourced) and run `snippet`; `extra`
    lines reach it as $1."""
    return subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; {snippet}', script, "\n".join(extra or [])],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.stem)
def test_one_node_of_the_first_group_and_a_bounded_import(example: Path) -> None:
    cfg = load_config(example)
    script = render_import_image(cfg)
    found = directives(script)
    assert found["partition"] == cfg.compute_groups[0].name
    assert found["nodes"] == "1" and found["ntasks"] == "1" and found["export"] == "ALL"
    assert int(found["time"]) == TIME_LIMITS[IMPORT_JOB]
    assert WAITS["IMPORT_TIMEOUT"] + WAITS["KILL_GRACE"] < TIME_LIMITS[IMPORT_JOB] * 60
    assert import_job_path() == "/opt/gpucluster/jobs/import-image.sbatch"
    fsx = cfg.storage.fsx_lustre
    assert fsx is not None
    assert f'readonly DEFAULT_IMAGE_DIR="{fsx.mount_point}/containers"' in script


@pytest.mark.parametrize(
    ("image", "name"),
    [
        (ECR, "train+v1.sqsh"),
        # as enroot import names it without -o: nvidia+pytorch+25.04-py3.sqsh
        ("nvcr.io#nvidia/pytorch:25.04-py3", "nvidia+pytorch+25.04-py3.sqsh"),
        ("user@registry.example.com#team/model@sha256:abc", "team+model+sha256+abc.sqsh"),
        ("ubuntu:24.04", "ubuntu+24.04.sqsh"),
    ],
)
def test_the_squashfs_is_named_as_enroot_names_it_without_the_registry(image: str, name: str) -> None:
    assert squashfs_name(image) == name
    script = render_import_image(load_config(EXAMPLES[0]))
    result = _bash(script, f"squashfs_name '{image}'")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{name}\n"


# What software.training_image (and the job's own check) accept: [A-Za-z0-9._/:#@+-]+.
IMAGE_CHARACTERS = "abcxyzABCXYZ0129._/:#@+-"
_SCRIPT = render_import_image(load_config(EXAMPLES[0]))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet=IMAGE_CHARACTERS, min_size=1, max_size=40), min_size=1, max_size=80))
def test_the_shell_name_of_a_command_line_image_agrees_with_python(images: list[str]) -> None:
    # One bash for the whole batch: every reference on a line of its own, one name a line back.
    result = _bash(
        _SCRIPT, 'while IFS= read -r image; do squashfs_name "${image}"; done <<<"$1"', extra=images
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [squashfs_name(image) for image in images]
    for image in images:
        SoftwareConfig(training_image=image)  # each one the config accepts


def test_the_configured_image_gets_the_rendered_name(tmp_path: Path) -> None:
    cfg = load_config(_with_software(tmp_path, f"  training_image: {ECR}\n"))
    script = render_import_image(cfg)
    assert 'readonly DEFAULT_NAME="train+v1.sqsh"' in script
    # The job takes the configured image's name from the rendering, not from its shell copy.
    renamed = script.replace('readonly DEFAULT_NAME="train+v1.sqsh"', 'readonly DEFAULT_NAME="rendered.sqsh"')
    assert _bash(renamed, f"IMAGE='{ECR}'; image_file_name").stdout == "rendered.sqsh\n"
    other = "nvcr.io#nvidia/pytorch:25.04-py3"
    assert _bash(renamed, f"IMAGE='{other}'; image_file_name").stdout == f"{squashfs_name(other)}\n"


def test_image_and_directory_come_from_the_config(tmp_path: Path) -> None:
    cfg = load_config(_with_software(tmp_path, f"  training_image: {ECR}\n  image_dir: /fsx/team/images\n"))
    script = render_import_image(cfg)
    assert f'readonly DEFAULT_IMAGE="{ECR}"' in script
    assert 'readonly DEFAULT_IMAGE_DIR="/fsx/team/images"' in script
    # Credentials never come from the config: the job only points at enroot's own file.
    assert "password" not in cfg.software.model_dump_json()
    assert ".credentials" in script


def test_without_an_image_the_job_says_what_to_pass() -> None:
    script = render_import_image(load_config(EXAMPLES[0]))
    result = _bash(script, "SLURM_JOB_ID=1 main")
    assert result.returncode == 1
    assert "no image to import: pass one" in result.stdout and "software.training_image" in result.stdout


def test_an_image_with_shell_syntax_is_refused_in_the_config(tmp_path: Path) -> None:
    from gpucluster.bad_input import BadInput

    with pytest.raises(BadInput) as info:
        load_config(_with_software(tmp_path, "  training_image: 'train:v1;reboot'\n"))
    assert "software.training_image" in str(info.value)


def test_the_job_says_whether_the_other_jobs_use_the_file(tmp_path: Path) -> None:
    cfg = load_config(_with_software(tmp_path, f"  training_image: {ECR}\n  image_dir: /fsx/images\n"))
    script = render_import_image(cfg)
    default = _bash(script, f"IMAGE='{ECR}' IMAGE_DIR=/fsx/images report_default /fsx/images/train+v1.sqsh")
    assert "the nccl and torchrun jobs run in it by default" in default.stdout
    other = _bash(script, "IMAGE=other:v2 IMAGE_DIR=/fsx/images report_default /fsx/images/other+v2.sqsh")
    assert "NCCL_TESTS_CONTAINER=/fsx/images/other+v2.sqsh or TRAIN_CONTAINER_IMAGE=" in other.stdout

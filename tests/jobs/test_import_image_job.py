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

from gpucluster.bootstrap import ecr_login
from gpucluster.config.loader import load_config
from gpucluster.config.software import SoftwareConfig
from gpucluster.jobs.validation import IMPORT_JOB, TIME_LIMITS, WAITS, import_job_path, render_import_image
from gpucluster.names import squashfs_name
from gpucluster.resolved import resolve
from tests.conftest import EXAMPLES
from tests.jobs.test_validation_jobs import directives

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
    script = render_import_image(resolve(cfg))
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
    script = render_import_image(resolve(load_config(EXAMPLES[0])))
    result = _bash(script, f"squashfs_name '{image}'")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{name}\n"


# What the job's own check accepts, and software.training_image too without a login (user@):
# [A-Za-z0-9._/:#@+-]+.
IMAGE_CHARACTERS = "abcxyzABCXYZ0129._/:#@+-"
_SCRIPT = render_import_image(resolve(load_config(EXAMPLES[0])))


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
        if "@" not in image:
            SoftwareConfig(training_image=image)  # each one the config accepts


def test_the_configured_image_gets_the_rendered_name(tmp_path: Path) -> None:
    cfg = load_config(_with_software(tmp_path, f"  training_image: {ECR}\n"))
    script = render_import_image(resolve(cfg))
    assert 'readonly DEFAULT_NAME="train+v1.sqsh"' in script
    # The job takes the configured image's name from the rendering, not from its shell copy.
    renamed = script.replace('readonly DEFAULT_NAME="train+v1.sqsh"', 'readonly DEFAULT_NAME="rendered.sqsh"')
    assert _bash(renamed, f"IMAGE='{ECR}'; image_file_name").stdout == "rendered.sqsh\n"
    other = "nvcr.io#nvidia/pytorch:25.04-py3"
    assert _bash(renamed, f"IMAGE='{other}'; image_file_name").stdout == f"{squashfs_name(other)}\n"


def test_image_and_directory_come_from_the_config(tmp_path: Path) -> None:
    cfg = load_config(_with_software(tmp_path, f"  training_image: {ECR}\n  image_dir: /fsx/team/images\n"))
    script = render_import_image(resolve(cfg))
    assert f'readonly DEFAULT_IMAGE="{ECR}"' in script
    assert 'readonly DEFAULT_IMAGE_DIR="/fsx/team/images"' in script
    # Credentials never come from the config: the job only points at enroot's own file.
    assert "password" not in cfg.software.model_dump_json()
    assert ".credentials" in script


def test_without_an_image_the_job_says_what_to_pass() -> None:
    script = render_import_image(resolve(load_config(EXAMPLES[0])))
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
    script = render_import_image(resolve(cfg))
    default = _bash(script, f"IMAGE='{ECR}' IMAGE_DIR=/fsx/images report_default /fsx/images/train+v1.sqsh")
    assert "the nccl and torchrun jobs run in it by default" in default.stdout
    other = _bash(script, "IMAGE=other:v2 IMAGE_DIR=/fsx/images report_default /fsx/images/other+v2.sqsh")
    assert "NCCL_TESTS_CONTAINER=/fsx/images/other+v2.sqsh or TRAIN_CONTAINER_IMAGE=" in other.stdout


# Stands in for sudo running the node's ECR helper: records its arguments, prints a token
# (or fails as a role without ecr:GetAuthorizationToken does).
SUDO_STUB = """#!/bin/bash
printf '%s\\n' "$*" >>"{calls}"
if [[ -n "${{HELPER_DENY:-}}" ]]; then
  echo "An error occurred (AccessDeniedException) when calling the GetAuthorizationToken operation" >&2
  exit 254
fi
echo "ecr-token-from-the-role"
"""
HELPER_CALL = f"-n {ecr_login.HELPER}"
ECR_HOST = "123456789012.dkr.ecr.us-east-2.amazonaws.com"


def _credentials_run(tmp_path: Path, image: str, user_lines: str | None, deny: bool = False):
    """prepare_credentials for IMAGE with a user credentials file holding `user_lines` (None:
    no file); prints what Enroot would read, then cleans up as the job's exit does."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    calls = tmp_path / "helper-calls"
    (stubs / "sudo").write_text(SUDO_STUB.format(calls=calls))
    (stubs / "sudo").chmod(0o755)
    config = tmp_path / "enroot"
    config.mkdir()
    if user_lines is not None:
        (config / ".credentials").write_text(user_lines)
    snippet = (
        f"IMAGE='{image}'; prepare_credentials; "
        'echo "CONFIG=${ENROOT_CONFIG_PATH}"; cat "${ENROOT_CONFIG_PATH}/.credentials" 2>/dev/null || true; '
        'stat -c "MODE=%a" "${ENROOT_CONFIG_PATH}"; cleanup; '
        '[[ -e "${ENROOT_CONFIG_PATH}" ]] && echo KEPT || echo REMOVED'
    )
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "ENROOT_CONFIG_PATH": str(config), "TMPDIR": str(tmp_path)}
    if deny:
        env["HELPER_DENY"] = "1"
    result = _bash(_SCRIPT, snippet, env=env)
    return result, config, calls


def test_an_ecr_image_gets_the_instance_roles_login_in_a_private_copy(tmp_path: Path) -> None:
    user = "machine nvcr.io login $oauthtoken password $(cat ~/.ngc-key)"  # no newline at the end
    result, config, calls = _credentials_run(tmp_path, f"{ECR_HOST}#team/train:v1", user)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout.splitlines()
    private = next(line for line in out if line.startswith("CONFIG=")).removeprefix("CONFIG=")
    assert private != str(config) and Path(private).parent == tmp_path
    # The user's lines first, untouched (enroot evaluates their $(...) itself), then ours on
    # a line of its own although the user's file does not end in a newline.
    assert out[out.index(f"CONFIG={private}") + 1 : out.index("MODE=700")] == [
        user,
        f"machine {ECR_HOST} login AWS password ecr-token-from-the-role",
    ]
    assert calls.read_text() == f"{HELPER_CALL} us-east-2\n"
    assert (config / ".credentials").read_text() == user
    assert out[-1] == "REMOVED"
    assert f"registry credentials for {ECR_HOST}: the node's instance role" in result.stdout


@pytest.mark.parametrize(
    "image",
    [f"{ECR_HOST}#train:v1", f"AWS@{ECR_HOST}#train@sha256:abc", f"{ECR_HOST}/train:v1"],
)
def test_the_users_own_line_for_the_registry_wins(tmp_path: Path, image: str) -> None:
    user = f"  machine {ECR_HOST} login AWS password $(my-own-login)\n"
    result, config, calls = _credentials_run(tmp_path, image, user)
    assert result.returncode == 0, result.stderr
    assert f"CONFIG={config}" in result.stdout.splitlines()
    assert not calls.exists()
    assert f"registry credentials for {ECR_HOST}: {config}/.credentials" in result.stdout


@pytest.mark.parametrize(
    ("image", "region"),
    [
        ("123456789012.dkr.ecr.eu-west-1.amazonaws.com#shared/base:1", "eu-west-1"),
        ("210987654321.dkr.ecr-fips.us-gov-west-1.amazonaws.com#train:v1", "us-gov-west-1"),
    ],
)
def test_without_a_user_file_the_login_uses_the_registrys_region(
    tmp_path: Path, image: str, region: str
) -> None:
    result, _, calls = _credentials_run(tmp_path, image, None)
    assert result.returncode == 0, result.stderr
    assert calls.read_text() == f"{HELPER_CALL} {region}\n"
    host = image.split("#")[0]
    assert f"machine {host} login AWS password ecr-token-from-the-role" in result.stdout.splitlines()


@pytest.mark.parametrize("image", ["nvcr.io#nvidia/pytorch:25.04-py3", "ubuntu:24.04", "team/model:v1"])
def test_other_registries_never_ask_for_the_roles_login(tmp_path: Path, image: str) -> None:
    result, config, calls = _credentials_run(tmp_path, image, None)
    assert result.returncode == 0, result.stderr
    assert f"CONFIG={config}" in result.stdout.splitlines() and not calls.exists()
    assert "only public images will pull" in result.stdout


def test_a_refused_login_stops_the_job_naming_the_role_and_the_config_key(tmp_path: Path) -> None:
    result, _, _ = _credentials_run(tmp_path, f"{ECR_HOST}#train:v1", None, deny=True)
    assert result.returncode == 1
    assert "AccessDeniedException" in result.stderr
    assert f"FAILED: sudo {HELPER_CALL} us-east-2 failed" in result.stdout
    assert "software.ecr_repositories" in result.stdout
    assert not list(tmp_path.glob("gpucluster-enroot.*"))

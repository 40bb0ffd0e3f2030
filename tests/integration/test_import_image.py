"""The rendered import-image job on real Slurm: submitted as a user would, it runs enroot once
on one compute node and renames the finished squashfs into place. A stand-in `enroot` records
its arguments and the inode of the file it wrote, so the test can tell a rename from a copy,
or the credentials file it was handed (an ECR registry: the node's instance role through a
stand-in `sudo` for the node's ECR helper)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpucluster.bootstrap import ecr_login
from gpucluster.jobs.validation import import_job_path, render_import_image
from gpucluster.resolved import resolve
from tests.integration.cluster import SlurmCluster
from tests.integration.test_validation_jobs import finished, submit

pytestmark = pytest.mark.slurm

IMAGE = "123456789012.dkr.ecr.us-east-2.amazonaws.com#train:v1"

# Writes the image where -o says, as enroot import does, and records what it was asked.
ENROOT = """#!/bin/bash
set -euo pipefail
[[ "$1" == import && "$2" == -o ]] || {{ echo "stub enroot: unexpected arguments: $*" >&2; exit 2; }}
[[ ! -e "$3" ]] || {{ echo "[ERROR] File already exists: $3" >&2; exit 1; }}
printf 'hsqs squashfs of %s\\n' "$4" >"$3"
printf '%s\\n' "$@" >"{record}"
stat -c %i "$3" >>"{record}"
"""
# Fails as enroot does when the registry refuses the pull, after writing part of the image.
ENROOT_FAILS = """#!/bin/bash
printf 'partial' >"$3"
echo "[ERROR] URL https://auth.docker.io/token returned error code: 401 Unauthorized" >&2
exit 1
"""


# Records the configuration directory enroot was given and the credentials file enroot would
# read there ($ENROOT_CONFIG_PATH/.credentials, enroot's src/docker.sh).
ENROOT_READS_CREDENTIALS = """#!/bin/bash
set -euo pipefail
{{
  echo "CONFIG=${{ENROOT_CONFIG_PATH}}"
  stat -c "MODE=%a" "${{ENROOT_CONFIG_PATH}}"
  cat "${{ENROOT_CONFIG_PATH}}/.credentials"
}} >"{record}"
printf 'hsqs\\n' >"$3"
"""
# sudo running the node's ECR helper (gpucluster.bootstrap.ecr_login), which asks the instance role.
SUDO = """#!/bin/bash
printf '%s\\n' "$*" >>"{calls}"
echo ecr-token-from-the-role
"""


def _executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path.parent


@pytest.fixture
def job(cluster: SlurmCluster) -> Path:
    """The job rendered for the session cluster, as a login node installs it."""
    target = cluster.root / "import" / import_job_path().lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_import_image(resolve(cluster.cfg)))
    return target


def _unique(cluster: SlurmCluster, name: str) -> Path:
    return cluster.root / "import" / f"{name}-{os.getpid()}-{len(list((cluster.root / 'import').iterdir()))}"


def test_import_writes_a_temporary_name_and_renames_it_into_place(cluster, job):
    where = _unique(cluster, "run")
    record = where / "enroot-args"
    stub = _executable(where / "bin" / "enroot", ENROOT.format(record=record))
    _executable(where / "bin" / "sudo", SUDO.format(calls=where / "helper-calls"))
    images = where / "images"
    job_id, submit_dir = submit(cluster, job, IMAGE, path=[stub], extra_env={"IMAGE_DIR": str(images)})
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "COMPLETED", out
    final = images / "train+v1.sqsh"
    *args, inode = record.read_text().splitlines()
    assert args[:2] == ["import", "-o"] and args[3] == f"docker://{IMAGE}"
    partial = Path(args[2])
    # enroot wrote a temporary name in the same directory; that very file (same inode) is the
    # image now, and the temporary name is gone.
    assert partial.parent == images and partial.name != final.name and partial.name.startswith(".")
    assert not partial.exists()
    assert final.read_text() == f"hsqs squashfs of docker://{IMAGE}\n"
    assert str(final.stat().st_ino) == inode
    assert sorted(p.name for p in images.iterdir()) == [final.name]
    assert f"imported {IMAGE}: {final}" in out

    # A second run leaves the image alone; --force imports it again into place.
    record.unlink()
    job_id, submit_dir = submit(cluster, job, IMAGE, path=[stub], extra_env={"IMAGE_DIR": str(images)})
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "COMPLETED" and "is already there; nothing to do" in out, out
    assert not record.exists()
    job_id, submit_dir = submit(
        cluster, job, IMAGE, "--force", path=[stub], extra_env={"IMAGE_DIR": str(images)}
    )
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "COMPLETED", out
    assert str(final.stat().st_ino) == record.read_text().splitlines()[-1]
    assert sorted(p.name for p in images.iterdir()) == [final.name]


def test_a_failed_import_leaves_no_partial_file_and_the_old_image_in_place(cluster, job):
    where = _unique(cluster, "fail")
    stub = _executable(where / "bin" / "enroot", ENROOT_FAILS)
    _executable(where / "bin" / "sudo", SUDO.format(calls=where / "helper-calls"))
    images = where / "images"
    images.mkdir(parents=True)
    old = images / "train+v1.sqsh"
    old.write_text("old image\n")
    job_id, submit_dir = submit(
        cluster, job, IMAGE, "--force", path=[stub], extra_env={"IMAGE_DIR": str(images)}
    )
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "FAILED", out
    assert f"FAILED: enroot import of {IMAGE} failed (exit 1)" in out
    assert old.read_text() == "old image\n"
    assert sorted(p.name for p in images.iterdir()) == [old.name]


def test_an_ecr_import_hands_enroot_the_instance_roles_login_beside_the_users_lines(cluster, job):
    """The user's credentials file has no line for the ECR registry: enroot reads a private copy
    of it with a line whose password the node's ECR helper made with the instance role, gone
    after the job; the user's file is untouched. With the user's own line, enroot reads the
    user's file and the helper is never run."""
    where = _unique(cluster, "ecr")
    record = where / "enroot-read"
    calls = where / "helper-calls"
    stubs = _executable(where / "bin" / "enroot", ENROOT_READS_CREDENTIALS.format(record=record))
    _executable(where / "bin" / "sudo", SUDO.format(calls=calls))
    user_config = where / "user-enroot"
    user_config.mkdir()
    user_file = user_config / ".credentials"
    user_file.write_text("machine nvcr.io login $oauthtoken password $(cat ~/.ngc-key)\n")
    env = {"IMAGE_DIR": str(where / "images"), "ENROOT_CONFIG_PATH": str(user_config)}

    job_id, submit_dir = submit(cluster, job, IMAGE, path=[stubs], extra_env=env)
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "COMPLETED", out
    read = record.read_text().splitlines()
    private = Path(read[0].removeprefix("CONFIG="))
    assert private != user_config and read[1] == "MODE=700"
    registry = IMAGE.split("#")[0]
    assert read[2:] == [
        "machine nvcr.io login $oauthtoken password $(cat ~/.ngc-key)",
        "",
        f"machine {registry} login AWS password ecr-token-from-the-role",
    ]
    assert calls.read_text() == f"-n {ecr_login.HELPER} us-east-2\n"
    assert not private.exists()
    assert user_file.read_text() == "machine nvcr.io login $oauthtoken password $(cat ~/.ngc-key)\n"

    calls.unlink()
    own = f"machine {registry} login AWS password $(my-own-login)\n"
    user_file.write_text(own)
    job_id, submit_dir = submit(cluster, job, IMAGE, "--force", path=[stubs], extra_env=env)
    state, out = finished(cluster, job_id, submit_dir)
    assert state == "COMPLETED", out
    assert record.read_text().splitlines() == [
        f"CONFIG={user_config}",
        f"MODE={oct(user_config.stat().st_mode & 0o777)[2:]}",
        own.strip(),
    ]
    assert not calls.exists()

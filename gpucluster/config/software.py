"""`software:`: the Slurm release, the pinned Enroot, Pyxis and Lustre-repository downloads, and
the training image's recipe (NGC base image, EFA installer, nccl-tests) and where its squashfs lives."""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator, model_validator

from gpucluster.config.ecr import EcrRepositoryRef
from gpucluster.config.fields import PgpFingerprint, Sha256, StrictModel, fail, fail_at
from gpucluster.config.image_reference import ImageReference
from gpucluster.slurm_release import PINNED_SLURM

_PATH = re.compile(r"^/[A-Za-z0-9._/-]*$")


def _pinned(sha256: str, download: str) -> Any:
    """A download's checksum field: the sha256 published for the default version's file."""
    return Field(default=sha256, description=f"sha256 of {download}.")


class SoftwareConfig(StrictModel):
    """Pinned node software. Each checksum default is the sha256 published for the file of the
    default version; a node refuses to install a download whose sha256 differs."""

    slurm: str = Field(
        default=PINNED_SLURM,
        description=(
            f"Slurm release the nodes run: only {PINNED_SLURM}, which nodes build from pinned source "
            "(README: Which Slurm, and why)."
        ),
    )
    enroot_version: str = "4.2.1"
    enroot_sha256: Sha256 = _pinned(
        "5955c51e88df0c5ed538d87abb5264609d4bad55fa8570745ed5d4ec66c8ab91", "enroot_<version>-1_amd64.deb"
    )
    enroot_caps_sha256: Sha256 = _pinned(
        "ca22652dcbdd3ebb6e2c68df781ef4301647c79dd7a41ed62899c2fd0f692750",
        "enroot+caps_<version>-1_amd64.deb",
    )
    pyxis_version: str = "0.24.0"
    pyxis_sha256: Sha256 = _pinned(
        "9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4",
        "the pyxis v<version> source tarball (GitHub archive of the tag)",
    )
    ngc_pytorch_tag: str = Field(
        default="25.04-py3",
        description="Tag of nvcr.io/nvidia/pytorch the training image starts FROM (YY.MM-py3).",
    )
    ngc_pytorch_digest: Sha256 | None = Field(
        default=None,
        description=(
            "sha256 digest (hex, without `sha256:`) of that tag's image: pins the base image even if "
            "the tag is pushed again (`docker buildx imagetools inspect nvcr.io/nvidia/pytorch:TAG`)."
        ),
    )
    # ParallelCluster pins the same version and checksum (aws-parallelcluster-cookbook #2953).
    efa_installer_version: str = "1.41.0"
    efa_installer_sha256: Sha256 = _pinned(
        "3506354cdfbe31ff552fe75f5d0d9bb7efd29cf79bd99457347d29c751c38f9f",
        "aws-efa-installer-<version>.tar.gz",
    )
    # No published checksum: this is the sha256 of GitHub's archive of tag v2.19.6, reproduced
    # as `git archive --prefix=nccl-tests-2.19.6/ v2.19.6 | gzip -n` (the same method gives
    # the published pyxis 0.24.0 archive checksum above).
    nccl_tests_version: str = Field(
        default="2.19.6",
        description=(
            "nccl-tests release the training image builds for the validation jobs (2.19+ writes -J JSON)."
        ),
    )
    nccl_tests_sha256: Sha256 = _pinned(
        "adbd3d27ba6c00bd7b7cf98cc8811c6ad860427ecd5de59527466b21472c0d93",
        "the nccl-tests v<version> source tarball (GitHub archive of the tag)",
    )
    torch_version: str = Field(
        default="2.13.0",
        description=(
            "PyTorch release of the training environment the torchrun job builds once per user on "
            "shared storage when it runs on the host (pip install torch==VERSION: PyPI's Linux build, "
            "with CUDA); the same release `make test` trains with on CPU."
        ),
    )
    training_image: ImageReference | None = Field(
        default=None,
        description=(
            "Image the import-image job turns into one squashfs for every node, as Enroot names it: "
            "[REGISTRY#]IMAGE[:TAG], e.g. 123456789012.dkr.ecr.us-east-2.amazonaws.com#train:v1. "
            "Registry logins come from the user's enroot credentials file (ECR: the nodes' role), "
            "never from here: a reference with one (USER[:PASSWORD]@) is refused. "
            "Set, the nccl and torchrun jobs run in its squashfs (<image_dir>/<name>.sqsh) by default."
        ),
    )
    ecr_repositories: list[EcrRepositoryRef] | None = Field(
        default=None,
        max_length=50,
        description=(
            "ECR repositories the login and compute nodes' roles may pull from, each a repository "
            "URI (ACCOUNT.dkr.ecr.REGION.amazonaws.com/NAME) or ARN; `*` in NAME is a wildcard. "
            "Another account's repository must also allow these roles in its repository policy. "
            "null: every repository of the cluster's own account and region; []: none."
        ),
    )
    image_dir: str | None = Field(
        default=None,
        description="Shared directory for imported .sqsh images; null: <fsx mount point>/containers.",
    )
    lustre_repo_key_fingerprint: PgpFingerprint | None = Field(
        default=None,
        description=(
            "Fingerprint of the FSx Lustre client repository key (fsx-ubuntu-public-key.asc). "
            "Nodes whose kernel lacks a Lustre client module install one from that repository "
            "only when this is set; the FSx guide publishes no fingerprint for the Ubuntu key."
        ),
    )

    @field_validator("slurm")
    @classmethod
    def _slurm_release(cls, value: str) -> str:
        # One release: nodes build it from the source the real-Slurm suite runs.
        if value != PINNED_SLURM:
            raise fail(
                "slurm",
                f"Slurm {value} is not supported: gpucluster runs only Slurm {PINNED_SLURM}, built "
                f"from pinned source; set software.slurm to {PINNED_SLURM} or leave it out",
            )
        return value

    @field_validator("ngc_pytorch_tag")
    @classmethod
    def _ngc_tag(cls, value: str) -> str:
        # A moving tag (latest) would change the image under a pinned recipe.
        if not re.match(r"^\d{2}\.\d{2}-py3$", value):
            raise fail(
                "ngc_pytorch_tag", f"'{value}' is not an NGC PyTorch release tag; write it like 25.04-py3"
            )
        return value

    @field_validator("torch_version")
    @classmethod
    def _torch_release(cls, value: str) -> str:
        # Rendered into a pip requirement and a directory name: a release, never a range.
        if not re.match(r"^\d+\.\d+\.\d+$", value):
            raise fail("torch_version", f"'{value}' is not a PyTorch release; write it like 2.13.0")
        return value

    @field_validator("image_dir")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not _PATH.match(value):
            raise fail("path", f"'{value}' must be an absolute path of letters, digits, ._-/")
        return value

    @field_validator("enroot_version", "pyxis_version", "efa_installer_version", "nccl_tests_version")
    @classmethod
    def _semver(cls, value: str) -> str:
        if not re.match(r"^\d+\.\d+\.\d+$", value):
            raise fail("version", f"'{value}' is not a release number; write it like 3.5.0")
        return value

    @model_validator(mode="after")
    def _checksum_follows_version(self) -> SoftwareConfig:
        # A changed version with the default checksum would only fail on the node, at boot.
        pins = (
            ("enroot_version", ("enroot_sha256", "enroot_caps_sha256")),
            ("pyxis_version", ("pyxis_sha256",)),
            ("efa_installer_version", ("efa_installer_sha256",)),
            ("nccl_tests_version", ("nccl_tests_sha256",)),
        )
        fields = type(self).model_fields
        for version_field, checksum_fields in pins:
            if getattr(self, version_field) == fields[version_field].default:
                continue
            for checksum_field in checksum_fields:
                if getattr(self, checksum_field) == fields[checksum_field].default:
                    raise fail_at(
                        checksum_field,
                        f"{version_field} is {getattr(self, version_field)} but {checksum_field} "
                        f"is still the checksum of {fields[version_field].default}; set it to the "
                        "sha256 published for the new version",
                    )
        return self

"""The node software beyond Slurm (SlurmRelease) that the renderers pin: Enroot, Pyxis, the
torchrun job's PyTorch, the training image and the FSx Lustre client repository's key."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class ResolvedSoftware:
    enroot_version: str
    enroot_sha256: str
    enroot_caps_sha256: str
    pyxis_version: str
    pyxis_sha256: str
    torch_version: str
    # What the import-image job turns into the nodes' squashfs; None: jobs run on the host.
    training_image: str | None
    # None: nodes whose kernel lacks a Lustre client module install none.
    lustre_repo_key_fingerprint: str | None


def resolve_software(cfg: ClusterConfig) -> ResolvedSoftware:
    software = cfg.software
    return ResolvedSoftware(
        enroot_version=software.enroot_version,
        enroot_sha256=software.enroot_sha256,
        enroot_caps_sha256=software.enroot_caps_sha256,
        pyxis_version=software.pyxis_version,
        pyxis_sha256=software.pyxis_sha256,
        torch_version=software.torch_version,
        training_image=software.training_image,
        lustre_repo_key_fingerprint=software.lustre_repo_key_fingerprint,
    )

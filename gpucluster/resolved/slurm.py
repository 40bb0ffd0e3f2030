"""The Slurm release a cluster runs and what follows from it: the source the head builds and
the key under which the Cluster stack ships it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpucluster import names, slurm_release
from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class SlurmRelease:
    version: str
    # The pinned source: SchedMD's commit, the tarball's sha256, the one copy in the repository
    # and its S3 key beside the bundle (names.slurm_source_object_key).
    commit: str
    source_sha256: str
    source_tarball: Path
    source_object_key: str


def resolve_slurm(cfg: ClusterConfig) -> SlurmRelease:
    # The config accepts only the pinned release (SoftwareConfig), so the pin's source is its source.
    return SlurmRelease(
        version=cfg.software.slurm,
        commit=slurm_release.PINNED_COMMIT,
        source_sha256=slurm_release.PINNED_SHA256,
        source_tarball=slurm_release.SOURCE_TARBALL,
        source_object_key=names.slurm_source_object_key(slurm_release.PINNED_SHA256),
    )

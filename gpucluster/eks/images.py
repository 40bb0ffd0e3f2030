"""The Slinky container images the cluster runs, pinned to the cluster's Slurm release.

SlinkyProject/containers tags each build `<version>-<flavor>` and `<major.minor>-<flavor>`
(schedmd/slurm/docker-bake.hcl, format_tag); the full version is the pin. The `-pyxis`
variants of slurmd and login add Enroot and Pyxis, whose package installs PYXIS_CONF
(schedmd/slurm/25.11/ubuntu24.04/Dockerfile.pyxis); without them a `--container-image` job
silently runs outside any container.

Every Slurm image the cluster runs is named here and nowhere else (SLURM_COMPONENTS).
"""

from __future__ import annotations

from dataclasses import dataclass

REGISTRY = "ghcr.io/slinkyproject"
FLAVOR = "ubuntu24.04"
# Pyxis's plugstack file in the -pyxis images (the Pyxis .deb's; the Dockerfile links it).
PYXIS_CONF = "/usr/share/pyxis/pyxis.conf"
# plugstack.conf's include. A glob, unlike the EC2 path's explicit include: slurmctld reads
# plugstack.conf too, its image has no Pyxis, and an include of a missing file stops it,
# while a glob that matches nothing does not (Slinky v1.2.1 docs/usage/pyxis.md).
PYXIS_PLUGSTACK_GLOB = "/usr/share/pyxis/*"
# SlinkyProject/containers' image names (docker-bake.hcl targets).
SLURMCTLD = "slurmctld"
SLURMD = "slurmd-pyxis"
LOGIN = "login-pyxis"
SLURMDBD = "slurmdbd"
SLURMRESTD = "slurmrestd"
SLURM_COMPONENTS = (SLURMCTLD, SLURMD, LOGIN, SLURMDBD, SLURMRESTD)
# (component, Slurm version) -> the sha256 digest of its `<version>-<FLAVOR>` image, where one
# has been established; the chart then pulls by digest. None has been for 25.11.7: no registry
# is reachable from where this was written, and the newest SlinkyProject/containers build
# file read (commit 05efda0, 2026-06-25) builds 25.11.6 (README, "On EKS with Slinky").
DIGESTS: dict[tuple[str, str], str] = {}
# The chart's log sidecars and login init container; alpine's release, not `latest`.
ALPINE = "docker.io/library/alpine"
ALPINE_TAG = "3.22"


@dataclass(frozen=True)
class Image:
    repository: str
    tag: str
    # sha256 digest when one is established; None: pinned by tag only.
    digest: str | None = None

    def values(self) -> dict[str, str | None]:
        """The chart's image object (repository, tag, digest)."""
        return {"repository": self.repository, "tag": self.tag, "digest": self.digest}

    def reference(self) -> str:
        """The image as a pod spec names it, the way the chart writes its own
        (templates/_helpers.tpl: `repository@digest` when a digest is set, else `repository:tag`)."""
        if self.digest is not None:
            return f"{self.repository}@{self.digest}"
        return f"{self.repository}:{self.tag}"


def slurm_image(component: str, version: str) -> Image:
    """`component` (one of SLURM_COMPONENTS) at Slurm `version`."""
    return Image(f"{REGISTRY}/{component}", f"{version}-{FLAVOR}", DIGESTS.get((component, version)))


def alpine() -> Image:
    return Image(ALPINE, ALPINE_TAG)

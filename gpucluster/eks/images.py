"""The Slinky container images the cluster runs, pinned to the cluster's Slurm release.

SlinkyProject/containers tags each build `<version>-<flavor>` and `<major.minor>-<flavor>`
(schedmd/slurm/docker-bake.hcl, format_tag); the full version is the pin. The `-pyxis`
variants of slurmd and login add Enroot and Pyxis and link the Pyxis plugin's config to
PYXIS_PLUGSTACK_INCLUDE (schedmd/slurm/25.11/ubuntu24.04/Dockerfile.pyxis); without them a
`--container-image` job silently runs outside any container.
"""

from __future__ import annotations

from dataclasses import dataclass

REGISTRY = "ghcr.io/slinkyproject"
FLAVOR = "ubuntu24.04"
# Where the -pyxis images put Pyxis's plugstack file: plugstack.conf must include this path.
PYXIS_PLUGSTACK_INCLUDE = "/etc/slurm/plugstack.conf.d/pyxis.conf"
PYXIS_SUFFIX = "-pyxis"
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


def slurm_image(component: str, version: str) -> Image:
    """`component` (slurmctld, slurmd-pyxis, login-pyxis, ...) at Slurm `version`."""
    return Image(f"{REGISTRY}/{component}", f"{version}-{FLAVOR}")


def alpine() -> Image:
    return Image(ALPINE, ALPINE_TAG)

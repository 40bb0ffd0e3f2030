"""Enroot and Pyxis on the nodes: where each role keeps container state, the pinned
releases it downloads, and its enroot.conf. Production installs the release .debs and
builds Pyxis from its tagged archive; the real-Slurm suite renders the same enroot.conf
with its own paths."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster

NVME_MOUNT = "/opt/dlami/nvme"

ENROOT_RELEASES = "https://github.com/NVIDIA/enroot/releases/download"
ENROOT_DEPENDENCIES = (
    "squashfs-tools",
    "parallel",
    "fuse-overlayfs",
    "squashfuse",
    "pigz",
    "zstd",
    "jq",
    "curl",
)
ENROOT_HOOKS = ("50-slurm-pmi.sh", "50-slurm-pytorch.sh")
PYXIS_ARCHIVES = "https://github.com/NVIDIA/pyxis/archive/refs/tags"


@dataclass(frozen=True)
class EnrootPaths:
    runtime: str
    data: str
    cache: str
    temp: str

    @property
    def directories(self) -> tuple[str, ...]:
        return (self.runtime, self.data, self.cache, self.temp)


# Compute nodes keep container state on local NVMe; login nodes (no NVMe) on the root volume.
COMPUTE_ENROOT = EnrootPaths(
    runtime=f"{NVME_MOUNT}/enroot/runtime",
    data=f"{NVME_MOUNT}/enroot/data",
    cache=f"{NVME_MOUNT}/enroot/cache",
    temp=f"{NVME_MOUNT}/enroot/tmp",
)
LOGIN_ENROOT = EnrootPaths(
    runtime="/var/lib/enroot/runtime",
    data="/var/lib/enroot/data",
    cache="/var/lib/enroot/cache",
    temp="/var/tmp/enroot",
)


@dataclass(frozen=True)
class EnrootDownloads:
    deb: str
    deb_url: str
    caps_deb: str
    caps_url: str


@dataclass(frozen=True)
class PyxisDownload:
    tarball: str
    url: str


def enroot_downloads(resolved: ResolvedCluster) -> EnrootDownloads:
    version = resolved.software.enroot_version
    deb = f"enroot_{version}-1_amd64.deb"
    caps = f"enroot+caps_{version}-1_amd64.deb"
    return EnrootDownloads(
        deb=deb,
        deb_url=f"{ENROOT_RELEASES}/v{version}/{deb}",
        caps_deb=caps,
        caps_url=f"{ENROOT_RELEASES}/v{version}/{caps}",
    )


def pyxis_download(resolved: ResolvedCluster) -> PyxisDownload:
    version = resolved.software.pyxis_version
    return PyxisDownload(tarball=f"pyxis-{version}.tar.gz", url=f"{PYXIS_ARCHIVES}/v{version}.tar.gz")


def enroot_conf(resolved: ResolvedCluster, role: str, paths: EnrootPaths) -> str:
    """/etc/enroot/enroot.conf of a role whose container state lives under `paths` (the
    real-Slurm suite renders it with its own paths, as it overrides SlurmSite's)."""
    return render("enroot/enroot.conf.j2", cluster=resolved.name, role=role, paths=paths)

"""What the simulated node downloads (enroot, pyxis, the CloudWatch agent), as fixtures,
and a config whose software checksums match them."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Iterable

from gpucluster.bootstrap.container_runtime import enroot_downloads
from gpucluster.config import ClusterConfig, SoftwareConfig
from gpucluster.resolved import resolve
from gpucluster.slurm.build import PAM_MODULE, PAM_MODULE_DIR, NodeBuild
from gpucluster.slurm_release import PINNED_SLURM


def fixture_bytes(name: str) -> bytes:
    return f"fixture {name}\n".encode()


def pyxis_fixture(version: str) -> bytes:
    """A tar.gz shaped like GitHub's archive of the pyxis tag: pyxis-<version>/Makefile.

    Byte-identical at every call (gzip header time fixed), since the checksum in the config
    and the file the node downloads are made separately."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w") as tar,
    ):
        data = b"all:\n"
        info = tarfile.TarInfo(f"pyxis-{version}/Makefile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def _tarball(members: dict[str, tuple[bytes, int]]) -> bytes:
    """A byte-identical tar.gz of name -> (data, mode)."""
    raw = io.BytesIO()
    with (
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w") as tar,
    ):
        for name, (data, mode) in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def _listing(paths: Iterable[str]) -> tuple[bytes, int]:
    return ("".join(f"{path}\n" for path in paths).encode(), 0o644)


def slurm_source_fixture(build: NodeBuild) -> bytes:
    """A stand-in for the Slurm source: a configure that succeeds, upstream's unit files,
    and the list of files the make stub installs (tests/shell_stubs.py) from the top and
    from pam_slurm_adopt's directory, each its own."""
    top = f"slurm-{PINNED_SLURM}"
    pam = f"{PAM_MODULE_DIR}/{PAM_MODULE}"
    (contrib,) = build.contribs
    members = {
        f"{top}/configure": (b"#!/bin/sh\nexit 0\n", 0o755),
        f"{top}/stub-install-files": _listing(path for path in build.required_files if path != pam),
        f"{top}/{contrib}/stub-install-files": _listing([pam]),
    }
    for unit in build.units:
        members[f"{top}/etc/{unit}.service"] = (f"[Service]\nExecStart=/usr/sbin/{unit}\n".encode(), 0o644)
    return _tarball(members)


def slurm_package_fixture(build: NodeBuild) -> bytes:
    """What the head publishes on shared storage: the installed tree under usr/."""
    return _tarball({path.lstrip("/"): (b"", 0o755) for path in build.required_files})


def with_fixture_checksums(cfg: ClusterConfig) -> ClusterConfig:
    """The config with software checksums of the harness's download fixtures."""
    downloads = enroot_downloads(resolve(cfg))

    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    software = SoftwareConfig(
        slurm=cfg.software.slurm,
        enroot_version=cfg.software.enroot_version,
        enroot_sha256=digest(fixture_bytes(downloads.deb)),
        enroot_caps_sha256=digest(fixture_bytes(downloads.caps_deb)),
        pyxis_version=cfg.software.pyxis_version,
        pyxis_sha256=digest(pyxis_fixture(cfg.software.pyxis_version)),
    )
    return cfg.model_copy(update={"software": software})

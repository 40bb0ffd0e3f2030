"""What the simulated node downloads (enroot, pyxis, the CloudWatch agent), as fixtures,
and a config whose software checksums match them."""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile

from gpucluster.bootstrap.container_runtime import enroot_downloads
from gpucluster.config import ClusterConfig, SoftwareConfig


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


def with_fixture_checksums(cfg: ClusterConfig) -> ClusterConfig:
    """The config with software checksums of the harness's download fixtures."""
    downloads = enroot_downloads(cfg)

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

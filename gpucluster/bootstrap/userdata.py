"""The seam between the bootstrap renderer and the CDK constructs.

Each instance gets a thin user-data script (kept far below EC2's 16 KiB limit)
that downloads one bootstrap bundle from S3, checks its sha256 and runs the
script for the node's role. The bundle holds every rendered file for every
role; it is a deterministic tar.gz so its checksum is known at synth.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from dataclasses import dataclass
from typing import Literal

from gpucluster.bootstrap import boot_budget, node_logs
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup

Role = Literal["head", "login", "compute"]
USER_DATA_LIMIT = 8 * 1024


class UserDataTooLarge(ValueError):
    pass


@dataclass(frozen=True)
class BundleRef:
    """Where a node fetches the bundle; `url` may be a CDK token at synth."""

    url: str
    sha256: str

    @property
    def pointer(self) -> str:
        """The value of names.bundle_parameter: what `sha256sum` prints, then the URL."""
        return f"{self.sha256} {self.url}"


def render_bundle(resolved: ResolvedCluster) -> dict[str, str]:
    """Every file a node may need, keyed by path inside the bundle."""
    from gpucluster.bootstrap.bundle import bundle_files

    return bundle_files(resolved)


def bundle_archive(files: dict[str, str]) -> bytes:
    """A byte-for-byte reproducible tar.gz: sorted names, zero mtimes, root owner."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(files):
            data = files[name].encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o755 if name.endswith(".sh") else 0o644
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    packed = io.BytesIO()
    # The fastest level: nodes fetch the bundle once per boot from S3 in the region, where
    # 145 KB against level 9's 120 KB is nothing, while level 9 took 3% of a synth's CPU.
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, compresslevel=1) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def archive_sha256(archive: bytes) -> str:
    return hashlib.sha256(archive).hexdigest()


def render_user_data(
    resolved: ResolvedCluster,
    role: Role,
    bundle: BundleRef | None,
    group: ResolvedGroup | None = None,
) -> str:
    """The thin script of one role. The head's takes no bundle: it reads the bundle's
    location from SSM (names.bundle_parameter), so a change of any cluster setting leaves
    the head's launch template, and with it the instance, as it is."""
    if (role == "compute") != (group is not None):
        raise ValueError("a compute group is required for, and only for, the compute role")
    if (role == "head") != (bundle is None):
        raise ValueError("the head node reads its bundle from SSM; every other role needs one")
    script = render(
        "userdata/thin.sh.j2",
        cluster=resolved,
        role=role,
        group=group,
        bundle=bundle,
        node=resolved.node,
        bootstrap_log=node_logs.BOOTSTRAP_LOG,
        bundle_parameter=resolved.names.bundle_parameter,
        # Its retries are part of the boot budget; rendered, since it sources no config.
        attempts=" ".join(str(n) for n in range(1, boot_budget.USER_DATA_RETRIES + 1)),
        retry_backoff=boot_budget.RETRY_BACKOFF,
    )
    size = len(script.encode())
    if size > USER_DATA_LIMIT:
        where = f"compute group {group.name}" if group else f"{role} node"
        raise UserDataTooLarge(
            f"user-data for the {where} is {size} bytes, over the {USER_DATA_LIMIT}-byte budget "
            "(half of EC2's 16 KiB limit); move content into the bootstrap bundle"
        )
    return script

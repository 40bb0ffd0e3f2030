"""The bootstrap bundle as a file asset: one deterministic tar.gz for all roles, rendered
before the stacks are built (gpucluster.node_files); and the pinned Slurm source beside
it, which the head builds (hermetic: no boot downloads Slurm from a third party).

The archive's sha256, baked into each thin user data, lets a node refuse a bundle that is
not exactly what was synthesized.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names


def _file_asset(
    scope: Construct, asset_hash: str, suffix: str, write: Callable[[Path], object]
) -> cdk.FileAssetLocation:
    """One file asset, staged as AssetStaging stages a file: written into the cloud assembly as
    `asset.<hash><suffix>` and registered with the stack's synthesizer under the display name
    `<construct path>/Asset`. Done here rather than through AssetStaging, whose first use
    loads Node code worth about 2% of a synth (`make bench`) for what is one file copy."""
    stack = cdk.Stack.of(scope)
    stage = cdk.Stage.of(scope)
    if stage is None:
        raise ValueError(f"{scope.node.path} is in no CDK app, so no cloud assembly to stage into")
    file_name = f"asset.{asset_hash}{suffix}"
    target = Path(stage.asset_outdir) / file_name
    partial = target.with_name(f".{file_name}.partial")
    try:
        write(partial)
        # A rename: a reader of a reused cloud assembly sees the old file or the new one.
        os.replace(partial, target)
    except OSError as exc:
        partial.unlink(missing_ok=True)
        # A failed write() names no file; the synth's error line names this one.
        raise OSError(exc.errno, exc.strerror, str(target)) from None
    return stack.synthesizer.add_file_asset(
        packaging=cdk.FileAssetPackaging.FILE,
        source_hash=asset_hash,
        file_name=file_name,
        display_name=f"{cdk.Names.stack_relative_construct_path(scope)}/Asset",
    )


@dataclass(frozen=True)
class BootstrapBundleProps:
    # The archive as rendered (NodeFiles.bundle, .bundle_sha256): staged byte for byte, under
    # its sha256 as the asset hash.
    archive: bytes
    sha256: str


class BootstrapBundle(Construct):
    """The bundle as a file asset in the CDK bootstrap bucket, with core APIs only (the L2
    Asset made Node load aws-s3 and its IAM/KMS helpers for one bucket ARN)."""

    bucket_arn: str
    object_key: str
    # s3:// URL of the uploaded archive: a token filled in at deploy.
    url: str

    def __init__(self, scope: Construct, id: str, props: BootstrapBundleProps) -> None:
        super().__init__(scope, id)
        suffix = "." + names.BUNDLE_FILE.split(".", 1)[1]
        location = _file_asset(self, props.sha256, suffix, lambda path: path.write_bytes(props.archive))
        # The ARN Bucket.fromBucketAttributes formats for the asset bucket.
        stack = cdk.Stack.of(self)
        self.bucket_arn = stack.format_arn(service="s3", region="", account="", resource=location.bucket_name)
        self.object_key = location.object_key
        self.url = location.s3_object_url


@dataclass(frozen=True)
class SlurmSourceProps:
    tarball: Path
    sha256: str
    # The key the head computes (names.slurm_source_object_key).
    object_key: str


class SlurmSource(Construct):
    """The vendored Slurm source tarball as a file asset in the bundle's bucket, under the
    key the head computes from the pin alone. The head checks the file's sha256 too."""

    object_key: str

    def __init__(self, scope: Construct, id: str, props: SlurmSourceProps) -> None:
        super().__init__(scope, id)
        suffix = "".join(props.tarball.suffixes)
        # The CDK's rule for a custom asset hash (sha256 of the given hash), which staged it
        # before: deployed clusters keep the object they have.
        asset_hash = hashlib.sha256(props.sha256.encode()).hexdigest()
        location = _file_asset(self, asset_hash, suffix, lambda path: shutil.copyfile(props.tarball, path))
        expected = props.object_key
        if location.object_key != expected:
            raise ValueError(
                f"the Slurm source asset's key is {location.object_key}, the head looks for {expected}"
            )
        self.object_key = location.object_key

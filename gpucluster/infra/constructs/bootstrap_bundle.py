"""The bootstrap bundle as a file asset: one deterministic tar.gz for all roles, rendered
before the stacks are built (gpucluster.node_files); and the pinned Slurm source beside
it, which the head builds (hermetic: no boot downloads Slurm from a third party).

The archive's sha256, baked into each thin user data, lets a node refuse a bundle that is
not exactly what was synthesized.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names


@dataclass(frozen=True)
class BootstrapBundleProps:
    # The archive as rendered (NodeFiles.bundle): staged byte for byte.
    archive: bytes


class BootstrapBundle(Construct):
    """What aws_s3_assets.Asset does for a file, with core APIs only.

    The L2 Asset made Node load aws-s3 and its IAM/KMS helpers for one bucket
    ARN (about 0.1 s of a 3 s synth). Same construct path ("Asset/Stage"), so
    the staged file, the asset hash, its display name and the templates are
    byte-identical to what the L2 wrote.
    """

    bucket_arn: str
    object_key: str
    # s3:// URL of the uploaded archive: a token filled in at deploy.
    url: str

    def __init__(self, scope: Construct, id: str, props: BootstrapBundleProps) -> None:
        super().__init__(scope, id)
        holder = Construct(self, "Asset")
        stack = cdk.Stack.of(self)
        # The asset is staged (copied into cdk.out under its content hash) as
        # it is constructed, so the temporary copy can go right after.
        staging = Path(tempfile.mkdtemp(prefix="gpucluster-bundle-"))
        try:
            (staging / names.BUNDLE_FILE).write_bytes(props.archive)
            stage = cdk.AssetStaging(holder, "Stage", source_path=str(staging / names.BUNDLE_FILE))
        finally:
            shutil.rmtree(staging)
        location = stack.synthesizer.add_file_asset(
            packaging=stage.packaging,
            source_hash=stage.asset_hash,
            file_name=stage.relative_staged_path(stack),
            display_name=cdk.Names.stack_relative_construct_path(holder),
        )
        # The ARN Bucket.fromBucketAttributes formats for the asset bucket.
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
    key the head computes: its sha256 is the custom asset hash, so the key follows from the
    pin alone. The head checks the file's sha256 too."""

    object_key: str

    def __init__(self, scope: Construct, id: str, props: SlurmSourceProps) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        holder = Construct(self, "Asset")
        stage = cdk.AssetStaging(
            holder,
            "Stage",
            source_path=str(props.tarball),
            asset_hash=props.sha256,
            asset_hash_type=cdk.AssetHashType.CUSTOM,
        )
        location = stack.synthesizer.add_file_asset(
            packaging=stage.packaging,
            source_hash=stage.asset_hash,
            file_name=stage.relative_staged_path(stack),
            display_name=cdk.Names.stack_relative_construct_path(holder),
        )
        expected = props.object_key
        if location.object_key != expected:
            raise ValueError(
                f"the Slurm source asset's key is {location.object_key}, the head looks for {expected}"
            )
        self.object_key = location.object_key

"""The bootstrap bundle as a file asset: one deterministic tar.gz for all roles.

The archive's sha256 is computed here at synth and baked into each thin
user-data, so a node refuses a bundle that is not exactly what was synthesized.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names
from gpucluster.bootstrap.userdata import BundleRef, archive_sha256, bundle_archive, render_bundle
from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class BootstrapBundleProps:
    cfg: ClusterConfig


class BootstrapBundle(Construct):
    """What aws_s3_assets.Asset does for a file, with core APIs only.

    The L2 Asset made Node load aws-s3 and its IAM/KMS helpers for one bucket
    ARN (about 0.1 s of a 3 s synth). Same construct path ("Asset/Stage"), so
    the staged file, the asset hash, its display name and the templates are
    byte-identical to what the L2 wrote.
    """

    bucket_arn: str
    object_key: str
    ref: BundleRef

    def __init__(self, scope: Construct, id: str, props: BootstrapBundleProps) -> None:
        super().__init__(scope, id)
        archive = bundle_archive(render_bundle(props.cfg))
        digest = archive_sha256(archive)
        holder = Construct(self, "Asset")
        stack = cdk.Stack.of(self)
        # The asset is staged (copied into cdk.out under its content hash) as
        # it is constructed, so the temporary copy can go right after.
        staging = Path(tempfile.mkdtemp(prefix="gpucluster-bundle-"))
        try:
            (staging / names.BUNDLE_FILE).write_bytes(archive)
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
        self.ref = BundleRef(url=location.s3_object_url, sha256=digest)

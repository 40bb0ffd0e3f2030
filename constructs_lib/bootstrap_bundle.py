"""The bootstrap bundle as an S3 asset: one deterministic tar.gz for all roles.

The archive's sha256 is computed here at synth and baked into each thin
user-data, so a node refuses a bundle that is not exactly what was synthesized.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct

from gpucluster.config import ClusterConfig
from gpucluster.userdata import BundleRef, archive_sha256, bundle_archive, render_bundle


@dataclass(frozen=True)
class BootstrapBundleProps:
    cfg: ClusterConfig


class BootstrapBundle(Construct):
    asset: s3_assets.Asset
    ref: BundleRef

    def __init__(self, scope: Construct, id: str, props: BootstrapBundleProps) -> None:
        super().__init__(scope, id)
        archive = bundle_archive(render_bundle(props.cfg))
        digest = archive_sha256(archive)
        # The asset is staged (copied into cdk.out under its content hash) as
        # it is constructed, so the temporary copy can go right after.
        staging = Path(tempfile.mkdtemp(prefix="gpucluster-bundle-"))
        try:
            (staging / "bundle.tar.gz").write_bytes(archive)
            self.asset = s3_assets.Asset(self, "Asset", path=str(staging / "bundle.tar.gz"))
        finally:
            shutil.rmtree(staging)
        self.ref = BundleRef(url=self.asset.s3_object_url, sha256=digest)

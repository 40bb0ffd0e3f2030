"""The CA bundle slurmdbd checks RDS's server certificate against, vendored and pinned.

RDS signs every database's server certificate with a per-region root CA and publishes all
of them in one file, https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem (RDS
user guide, "Using SSL/TLS to encrypt a connection to a DB instance"). That URL is a file
AWS rewrites whenever a region opens (copies seen in public repositories: 96 certificates in
April 2025, 102 by July 2025), so a download pinned by sha256 would stop every head's boot the
day AWS adds a region, and one not pinned would trust whatever the network served. The file
is vendored here instead (gpucluster/data/rds-global-bundle.pem), shipped in the bootstrap
bundle and checked by sha256 on the head (lib/accounting.sh) before slurmdbd reads it.

Provenance: the bytes with sha256 RDS_CA_BUNDLE_SHA256, taken from phenobarbital/asyncdb
(global-bundle.pem, commit bc6b097e69b51bcb14363833d07017ac1c6201f9, 2026-03-20); the same
certificates with CRLF line ends are in Alaminplabon/update_aristocar (commit 04ab1cb9, 2025-07),
and PeerDB-io/peerdb's stacks/flow.Dockerfile and another public Dockerfile pin the URL's
download to this very sha256 (`ADD --checksum=sha256:05c6b4a9...`). Checked here: 102
self-signed root CAs, each self-signature valid, all issued by "Amazon Web Services, Inc."
(OU "Amazon RDS"): "Amazon RDS <region> Root CA" RSA2048 G1, RSA4096 G1 and ECC384 G1 for 32
regions (af-south-1 to us-west-2, with ap-southeast-7 and mx-central-1) plus RDS's Beta and
Preview endpoints. Issued 2021-05-18 to 2024-09-30; the RSA2048 roots (RDS's default CA for
new databases, rds-ca-rsa2048-g1) expire from 2061-05-18, the others from 2121.

When AWS adds a region, or new roots, a gpucluster release vendors the new file, its pin and
COVERED_REGIONS (tests/test_rds_ca.py reads the certificates and checks all three agree); a
cluster whose database would be in a region the file does not cover is refused by `gpucluster
validate` (config.accounting_database), naming the region, rather than failing at the head's
first TLS handshake.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources

RDS_CA_BUNDLE_SHA256 = "05c6b4a9bf4daa95c888711481e19cc8e2e11aed4de8db759f51f4a6fce64917"
# Where the bootstrap bundle carries it, and where the head installs it for slurmdbd.
BUNDLE_PATH = "certs/rds-global-bundle.pem"
INSTALLED_PATH = "/etc/slurm/rds-global-bundle.pem"
_VENDORED = "data/rds-global-bundle.pem"
# The regions whose "Amazon RDS <region> Root CA RSA2048 G1" (RDS's default CA) the file holds.
COVERED_REGIONS = frozenset(
    {
        "af-south-1", "ap-east-1", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3",
        "ap-south-1", "ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3",
        "ap-southeast-4", "ap-southeast-5", "ap-southeast-7", "ca-central-1", "ca-west-1",
        "eu-central-1", "eu-central-2", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1",
        "eu-west-2", "eu-west-3", "il-central-1", "me-central-1", "me-south-1", "mx-central-1",
        "sa-east-1", "us-east-1", "us-east-2", "us-west-1", "us-west-2",
    }
)  # fmt: skip


class VendoredBundleChanged(RuntimeError):
    """The vendored file is not the pinned one: it was edited without updating the pin."""


@cache
def bundle_text() -> str:
    """The vendored bundle, refused unless it has the pinned sha256."""
    data = resources.files("gpucluster").joinpath(_VENDORED).read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != RDS_CA_BUNDLE_SHA256:
        raise VendoredBundleChanged(
            f"gpucluster/{_VENDORED} has sha256 {got}, not the pinned {RDS_CA_BUNDLE_SHA256}; "
            "restore it, or vendor AWS's new file with its pin and provenance in gpucluster/rds_ca.py"
        )
    return data.decode("ascii")

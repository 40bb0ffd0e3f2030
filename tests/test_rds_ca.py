"""The vendored RDS CA bundle (gpucluster.rds_ca) is AWS's: every certificate a self-signed
Amazon RDS root, the regions it covers the ones gpucluster.rds_ca lists, its bytes the pinned
ones; an edited copy is refused before it reaches a bundle."""

from __future__ import annotations

import hashlib
import re
from importlib import resources

import pytest
from cryptography import x509

from gpucluster import rds_ca

_ROOT = re.compile(
    r"Amazon RDS (?:(Beta|Preview) )?([a-z]{2}(?:-[a-z]+)+-\d) Root CA (RSA2048|RSA4096|ECC384) G1"
)


def _certificates() -> list[x509.Certificate]:
    return x509.load_pem_x509_certificates(rds_ca.bundle_text().encode())


def test_every_certificate_is_a_self_signed_amazon_rds_root_ca():
    certificates = _certificates()
    assert len(certificates) == 102
    for cert in certificates:
        cert.verify_directly_issued_by(cert)
        assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
        assert cert.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)[0].value == (
            "Amazon Web Services, Inc."
        )
        assert _ROOT.fullmatch(cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value)


def test_the_listed_regions_are_those_with_a_default_root_ca_in_the_file():
    regions = set()
    for cert in _certificates():
        found = _ROOT.fullmatch(cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value)
        assert found is not None
        stage, region, kind = found.groups()
        if stage is None and kind == "RSA2048":
            regions.add(region)
            # RDS's default CA for new databases (rds-ca-rsa2048-g1) outlives any cluster.
            assert cert.not_valid_after_utc.year >= 2061
    assert regions == rds_ca.COVERED_REGIONS


def test_the_file_has_the_pinned_sha256():
    data = resources.files("gpucluster").joinpath("data/rds-global-bundle.pem").read_bytes()
    assert hashlib.sha256(data).hexdigest() == rds_ca.RDS_CA_BUNDLE_SHA256
    assert b"\r" not in data


def test_an_edited_copy_is_refused(monkeypatch):
    monkeypatch.setattr(rds_ca, "RDS_CA_BUNDLE_SHA256", "0" * 64)
    rds_ca.bundle_text.cache_clear()
    try:
        with pytest.raises(rds_ca.VendoredBundleChanged, match="not the pinned"):
            rds_ca.bundle_text()
    finally:
        rds_ca.bundle_text.cache_clear()

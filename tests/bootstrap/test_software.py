"""Pinned node software: real checksums by default; a version bump that forgets one fails."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpucluster.config import SoftwareConfig
from gpucluster.config.loader import load_config

PUBLISHED = {
    # enroot 4.2.1 release .debs and the pyxis v0.24.0 tag archive (sources: bootstrap notes).
    "enroot_sha256": "5955c51e88df0c5ed538d87abb5264609d4bad55fa8570745ed5d4ec66c8ab91",
    "enroot_caps_sha256": "ca22652dcbdd3ebb6e2c68df781ef4301647c79dd7a41ed62899c2fd0f692750",
    "pyxis_sha256": "9c4cdb79a67301d8ea05951aa4d2c205f40cf6145e338214b0191add8b36d6c4",
}


def test_defaults_are_the_published_checksums_of_the_default_versions() -> None:
    software = SoftwareConfig()
    assert (software.enroot_version, software.pyxis_version) == ("4.2.1", "0.24.0")
    for field, digest in PUBLISHED.items():
        assert getattr(software, field) == digest


def test_no_example_warns_about_checksums() -> None:
    cfg = load_config("examples/default.yaml")
    assert not [note for note in cfg.warnings() if note.startswith("software")]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"enroot_version": "3.5.0"}, "enroot_sha256"),
        ({"enroot_version": "3.5.0", "enroot_sha256": "a" * 64}, "enroot_caps_sha256"),
        ({"pyxis_version": "0.20.0"}, "pyxis_sha256"),
    ],
)
def test_new_version_with_old_checksum_names_the_field(changes: dict, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SoftwareConfig(**changes)
    assert f"but {field} is still the checksum" in str(caught.value)


def test_new_version_with_its_own_checksums_is_accepted() -> None:
    software = SoftwareConfig(enroot_version="3.5.0", enroot_sha256="a" * 64, enroot_caps_sha256="b" * 64)
    assert software.enroot_sha256 == "a" * 64

"""Every verb that writes the config, run on every example: the file's lines differ only
where the verb meant to write (`vpc_id: null` stays `vpc_id: null`)."""

from __future__ import annotations

import difflib
import json
import shutil
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from gpucluster import names
from gpucluster.capacity import offerings
from gpucluster.config import ClusterConfig
from gpucluster.config.capacity import CapacityBlockCapacity
from gpucluster.config.loader import load_config
from tests.aws.buying import run
from tests.aws.stubs import StubbedAws
from tests.conftest import EXAMPLES as EC2_EXAMPLES
from tests.conftest import REPO

EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))  # `ami pin` takes EC2_EXAMPLES: it writes image.*
START = datetime(2027, 8, 2, 11, 30, tzinfo=UTC)
END = datetime(2027, 8, 9, 11, 30, tzinfo=UTC)
OFFERING = "cb-0123456789abcdef0"
RESERVATION = "cr-0fedcba9876543210"
AMI = "ami-0aaaabbbbccccdddd"
BOOTED = "ami-0eeeeffff00001111"


def _changes(before: str, after: str) -> tuple[list[str], list[str]]:
    old, new = before.splitlines(), after.splitlines()
    opcodes = difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()
    removed = [old[i] for tag, i1, i2, _, _ in opcodes if tag != "equal" for i in range(i1, i2)]
    added = [new[j] for tag, _, _, j1, j2 in opcodes if tag != "equal" for j in range(j1, j2)]
    return removed, added


def _key(line: str) -> str:
    return line.split(":", 1)[0].strip().removeprefix("- ")


def _copy(example: Path, tmp_path: Path) -> Path:
    path = tmp_path / example.name
    shutil.copyfile(example, path)
    return path


def _buy(aws: StubbedAws, path: Path) -> ClusterConfig:
    """`capacity buy` of a block for the first group, in the config's own AZ."""
    cfg = load_config(path)
    group = cfg.compute_groups[0]
    offerings.remember(
        [
            offerings.Offering(
                OFFERING, cfg.region, cfg.availability_zone, group.instance_type, group.count,
                START, END, 168, Decimal("1000.00"), "USD",
            )
        ]
    )  # fmt: skip
    aws.ec2(cfg.region).add_response(
        "purchase_capacity_block",
        {
            "CapacityReservation": {
                "CapacityReservationId": RESERVATION,
                "AvailabilityZone": cfg.availability_zone,
                "StartDate": START,
                "EndDate": END,
            }
        },
    )
    result = run("capacity", "buy", OFFERING, "--config", str(path), "--group", group.name, "--yes")
    assert result.exit_code == 0, result.output
    return cfg


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_capacity_buy_changes_only_the_block(aws: StubbedAws, example: Path, tmp_path: Path) -> None:
    path = _copy(example, tmp_path)
    before = path.read_text()
    cfg = _buy(aws, path)
    removed, added = _changes(before, path.read_text())
    if isinstance(cfg.compute_groups[0].capacity, CapacityBlockCapacity):
        # Already capacity-block: `type` stays as it was; the block's three fields change.
        assert [_key(line) for line in removed] == ["reservation_id", "start", "end"], removed
        assert [_key(line) for line in added] == ["reservation_id", "start", "end"], added
    else:  # on-demand: its `type` line changes and the block's fields are added below it
        assert [_key(line) for line in removed] == ["type"], removed
        assert [_key(line) for line in added] == ["type", "reservation_id", "start", "end"], added
    if example.stem == "default":  # the example: three lines, nothing else
        assert removed == [
            "      reservation_id: cr-0a1b2c3d4e5f67890",
            "      start: 2027-06-07T11:30:00Z",
            "      end: 2027-06-14T11:30:00Z",
        ]
        assert added == [
            f"      reservation_id: {RESERVATION}",
            "      start: 2027-08-02T11:30:00Z",
            "      end: 2027-08-09T11:30:00Z",
        ]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_capacity_extend_changes_only_the_end(aws: StubbedAws, example: Path, tmp_path: Path) -> None:
    path = _copy(example, tmp_path)
    cfg = load_config(path)
    capacity = cfg.compute_groups[0].capacity
    if not isinstance(capacity, CapacityBlockCapacity):
        _buy(aws, path)
        capacity = load_config(path).compute_groups[0].capacity
    assert isinstance(capacity, CapacityBlockCapacity)
    before = path.read_text()
    new_end = capacity.end + timedelta(days=7)
    aws.ec2(cfg.region).add_response(
        "describe_capacity_block_extension_offerings",
        {
            "CapacityBlockExtensionOfferings": [
                {
                    "CapacityBlockExtensionOfferingId": "cbe-0123456789abcdef0",
                    "CapacityBlockExtensionDurationHours": 168,
                    "CapacityBlockExtensionEndDate": new_end,
                    "UpfrontFee": "900.00",
                    "CurrencyCode": "USD",
                }
            ]
        },
    )
    aws.ec2(cfg.region).add_response(
        "purchase_capacity_block_extension",
        {
            "CapacityBlockExtensions": [
                {"CapacityReservationId": capacity.reservation_id, "CapacityBlockExtensionEndDate": new_end}
            ]
        },
    )
    group = cfg.compute_groups[0].name
    result = run("capacity", "extend", "--config", str(path), "--group", group, "--days", "7", "--yes")
    assert result.exit_code == 0, result.output
    removed, added = _changes(before, path.read_text())
    assert removed == [f"      end: {capacity.end:%Y-%m-%dT%H:%M:%SZ}"]
    assert added == [f"      end: {new_end:%Y-%m-%dT%H:%M:%SZ}"]


def _image_answer(aws: StubbedAws, region: str, ami: str) -> None:
    aws.ec2(region).add_response(
        "describe_images",
        {
            "Images": [
                {
                    "ImageId": ami,
                    "Name": "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) 20270701",
                    "CreationDate": "2027-07-01T00:00:00.000Z",
                    "Architecture": "x86_64",
                }
            ]
        },
        {"ImageIds": [ami]},
    )


@pytest.mark.parametrize("example", EC2_EXAMPLES, ids=lambda p: p.stem)
def test_ami_pin_changes_only_the_ami(aws: StubbedAws, example: Path, tmp_path: Path) -> None:
    path = _copy(example, tmp_path)
    before = path.read_text()
    cfg = load_config(path)
    aws.stub("ssm", cfg.region).add_response(
        "get_parameter", {"Parameter": {"Value": AMI}}, {"Name": cfg.image.ssm_parameter}
    )
    _image_answer(aws, cfg.region, AMI)
    result = run("ami", "pin", str(path))
    assert result.exit_code == 0, result.output
    removed, added = _changes(before, path.read_text())
    assert [_key(line) for line in removed] == (["ami_id"] if "  ami_id:" in before else [])
    # A config without an image section gains one, below everything it had.
    assert [_key(line) for line in added] == (["ami_id"] if "image:" in before else ["image", "ami_id"])
    assert load_config(path).image.ami_id == AMI


@pytest.mark.parametrize("example", EC2_EXAMPLES, ids=lambda p: p.stem)
def test_ami_pin_kernel_from_cluster_changes_only_the_image(
    aws: StubbedAws, example: Path, tmp_path: Path
) -> None:
    path = _copy(example, tmp_path)
    before = path.read_text()
    cfg = load_config(path)
    booted = cfg.image.ami_id or BOOTED
    aws.stub("ssm", cfg.region).add_response(
        "get_parameter",
        {"Parameter": {"Value": json.dumps({"ami_id": booted, "kernel": "6.8.0-1031-aws"})}},
        {"Name": names.head_image_parameter(cfg)},
    )
    if cfg.image.ami_id is None:
        _image_answer(aws, cfg.region, booted)
    result = run("ami", "pin", str(path), "--kernel-from-cluster")
    assert result.exit_code == 0, result.output
    removed, added = _changes(before, path.read_text())
    image_keys = [key for key in ("ami_id", "kernel") if f"  {key}:" in before]
    assert [_key(line) for line in removed] == (image_keys if cfg.image.ami_id is None else ["kernel"])
    expected = ["ami_id", "kernel"] if cfg.image.ami_id is None else ["kernel"]
    assert [_key(line) for line in added] == (expected if "image:" in before else ["image", *expected])
    assert load_config(path).image.kernel == "6.8.0-1031-aws"

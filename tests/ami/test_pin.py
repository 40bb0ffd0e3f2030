"""`gpucluster ami pin` against moto: the SSM parameter resolved once, the AMI's name and
date as a comment, the head's kernel read back; nothing else in the file changes."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from gpucluster import names
from gpucluster.cli import app
from gpucluster.config.image import DLAMI_UBUNTU_2404
from gpucluster.config.loader import load_config
from tests.aws.config_text import COMMENTED_CONFIG
from tests.moto_models import publish_public_parameter

REGION = "us-east-2"
ACCOUNT = "123456789012"  # moto's default account


def run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(COMMENTED_CONFIG)
    return path


def dlami() -> str:
    """An AMI named like the DLAMI, published under the DLAMI's parameter."""
    ec2 = boto3.client("ec2", region_name=REGION)
    base = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=base, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    name = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) 20261120"
    ami = ec2.create_image(InstanceId=instance, Name=name)["ImageId"]
    publish_public_parameter(ACCOUNT, REGION, DLAMI_UBUNTU_2404, ami)
    return ami


def changes(before: str, after: str) -> tuple[set[str], set[str]]:
    old, new = set(before.splitlines()), set(after.splitlines())
    return old - new, new - old


def test_pin_writes_the_ami_with_its_name_and_date(moto_aws: None, config: Path) -> None:
    ami = dlami()
    result = run("ami", "pin", str(config))
    assert result.exit_code == 0, result.output
    removed, added = changes(COMMENTED_CONFIG, config.read_text())
    assert removed == set()
    (line,) = added
    assert line.startswith(
        f"  ami_id: {ami}  # Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) 20261120, created 20"
    )
    assert load_config(config).image.ami_id == ami


def test_kernel_from_cluster_reads_the_heads_parameter(moto_aws: None, config: Path) -> None:
    ami = dlami()
    cfg = load_config(config)
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=names.head_image_parameter(cfg),
        Type="String",
        Value=json.dumps({"ami_id": ami, "kernel": "6.8.0-1021-aws"}),
    )
    result = run("ami", "pin", str(config), "--kernel-from-cluster")
    assert result.exit_code == 0, result.output
    pinned = load_config(config).image
    assert (pinned.ami_id, pinned.kernel) == (ami, "6.8.0-1021-aws")
    removed, added = changes(COMMENTED_CONFIG, config.read_text())
    assert removed == set() and len(added) == 2
    assert f"  kernel: 6.8.0-1021-aws  # uname -r on {ami}" in added


def test_kernel_of_another_ami_is_refused(moto_aws: None, config: Path) -> None:
    ami = dlami()
    assert run("ami", "pin", str(config)).exit_code == 0
    pinned = config.read_text()
    cfg = load_config(config)
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=names.head_image_parameter(cfg),
        Type="String",
        Value=json.dumps({"ami_id": "ami-0fffffffffffffff0", "kernel": "6.8.0-1099-aws"}),
    )
    result = run("ami", "pin", str(config), "--kernel-from-cluster")
    assert result.exit_code == 2
    assert f"image.ami_id: is {ami} but the cluster's head booted ami-0fffffffffffffff0" in result.stderr
    assert config.read_text() == pinned


def test_a_cluster_never_deployed_says_so(moto_aws: None, config: Path) -> None:
    result = run("ami", "pin", str(config), "--kernel-from-cluster")
    assert result.exit_code == 1
    assert "/gpucluster/teama/head/booted-image does not exist; deploy cluster teama" in result.stderr
    assert config.read_text() == COMMENTED_CONFIG


def test_the_stacks_placeholder_means_not_recorded_yet(moto_aws: None, config: Path) -> None:
    cfg = load_config(config)
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=names.head_image_parameter(cfg), Type="String", Value=names.HEAD_IMAGE_NOT_RECORDED
    )
    result = run("ami", "pin", str(config), "--kernel-from-cluster")
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert "/gpucluster/teama/head/booted-image is not recorded yet; the head node of teama writes it" in line
    assert "Traceback" not in result.output
    assert config.read_text() == COMMENTED_CONFIG


def test_a_missing_ssm_parameter_is_one_line(moto_aws: None, config: Path) -> None:
    result = run("ami", "pin", str(config))
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error aws ssm:GetParameter ({REGION}): ParameterNotFound")
    assert line.endswith(
        "it does not exist in us-east-2 for this account; check the name or id, and the region"
    )
    assert config.read_text() == COMMENTED_CONFIG


def test_buy_then_both_pins_change_only_their_lines_in_place(
    moto_aws: None, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's round trip: comments, key order, quoting and the flow maps of a hand-written
    config survive `capacity buy`, `ami pin` and `ami pin --kernel-from-cluster`, in order."""
    import difflib
    from datetime import UTC, datetime
    from decimal import Decimal

    from botocore.stub import Stubber

    from gpucluster.aws import clients
    from gpucluster.capacity import offerings
    from tests.aws.preflight_aws import SplitClient

    monkeypatch.setenv("GPUCLUSTER_CACHE_DIR", str(config.parent / "cache"))
    start, end = datetime(2027, 6, 7, 11, 30, tzinfo=UTC), datetime(2027, 6, 14, 11, 30, tzinfo=UTC)
    offerings.remember(
        [
            offerings.Offering(
                "cb-0123456789abcdef0", REGION, "us-east-2b", "p5.48xlarge", 2, start, end, 168,
                Decimal("64512.00"), "USD",
            )
        ]
    )  # fmt: skip
    purchase = Stubber(boto3.client("ec2", region_name=REGION))
    purchase.add_response(
        "purchase_capacity_block",
        {
            "CapacityReservation": {
                "CapacityReservationId": "cr-0fedcba9876543210",
                "AvailabilityZone": "us-east-2b",
                "StartDate": start,
                "EndDate": end,
            }
        },
    )
    purchase.activate()
    monkeypatch.setattr(
        clients,
        "make_client",
        lambda service, region: SplitClient(
            boto3.client(service, region_name=region), purchase.client, {"purchase_capacity_block"}
        ),
    )
    ami = dlami()
    assert run("capacity", "buy", "cb-0123456789abcdef0", "--config", str(config), "--yes").exit_code == 0
    assert run("ami", "pin", str(config)).exit_code == 0
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=names.head_image_parameter(load_config(config)),
        Type="String",
        Value=json.dumps({"ami_id": ami, "kernel": "6.8.0-1021-aws"}),
    )
    assert run("ami", "pin", str(config), "--kernel-from-cluster").exit_code == 0
    purchase.assert_no_pending_responses()

    before, after = COMMENTED_CONFIG.splitlines(), config.read_text().splitlines()
    opcodes = difflib.SequenceMatcher(a=before, b=after, autojunk=False).get_opcodes()
    removed = [before[i] for tag, i1, i2, _, _ in opcodes if tag != "equal" for i in range(i1, i2)]
    added = [after[j] for tag, _, _, j1, j2 in opcodes if tag != "equal" for j in range(j1, j2)]
    assert removed == [
        "    capacity: {type: on-demand}   # bought in the console for now",
        "availability_zone: us-east-2a",
    ]
    assert added == [
        "    capacity:                     # bought in the console for now",
        "      type: capacity-block",
        "      reservation_id: cr-0fedcba9876543210",
        "      start: 2027-06-07T11:30:00Z",
        "      end: 2027-06-14T11:30:00Z",
        "availability_zone: us-east-2b",
        f"  ami_id: {ami}  # Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) 20261120, created "
        + added[-2].rsplit("created ", 1)[-1],
        f"  kernel: 6.8.0-1021-aws  # uname -r on {ami}",
    ]


def test_a_parameter_naming_an_image_the_account_cannot_see_is_one_line(moto_aws: None, config: Path) -> None:
    publish_public_parameter(ACCOUNT, REGION, DLAMI_UBUNTU_2404, "ami-0123456789abcdef0")
    result = run("ami", "pin", str(config))
    assert result.exit_code == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error aws ec2:DescribeImages ({REGION}): ami-0123456789abcdef0 (from {DLAMI_UBUNTU_2404}) "
    )
    assert "check image.ssm_parameter" in line
    assert config.read_text() == COMMENTED_CONFIG

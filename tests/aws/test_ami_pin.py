"""`gpucluster ami pin` against moto: the SSM parameter resolved once, the AMI's name and
date as a comment, the head's kernel read back; nothing else in the file changes."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
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
def moto_aws(monkeypatch: pytest.MonkeyPatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield


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
    assert line.startswith(f"error: aws ssm:GetParameter ({REGION}): ParameterNotFound")
    assert line.endswith(
        "it does not exist in us-east-2 for this account; check the name or id, and the region"
    )
    assert config.read_text() == COMMENTED_CONFIG

"""`gpucluster preflight`: every check's pass and fail with its fix; exit 0 / 1 / 2
(the AWS behind it: tests/aws/preflight_aws.py; the quota rows: test_quotas.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.aws import clients
from tests.aws.preflight_aws import DLAMI_NAME, EXAMPLE, REGION, Aws, account_ready, aws, rows, run

__all__ = ["aws"]  # the fixture, imported to replace the StubbedAws one of conftest


def test_an_account_ready_for_the_example_passes(aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota()
    result = run()
    assert result.exit_code == 0, result.output
    table = rows(result.stdout)
    assert set(table) == {
        "credentials",
        "region and AZ",
        "m7i.2xlarge in AZ",
        "m7i.xlarge in AZ",
        "p5.48xlarge in AZ",
        "reservation gpu",
        "quota gpu",
        "quota Standard",
        "AMI",
        "CDK bootstrap",
        "network",
    }
    assert all(row.startswith("pass") for row in table.values())
    assert "12" in table["quota Standard"] and "CDKToolkit version 21" in table["CDK bootstrap"]
    flat = " ".join(result.stdout.split())
    assert "2 x p5.48xlarge in Capacity Block cr-0a1b2c3d4e5f67890: not counted against Running" in flat


def test_each_failure_names_its_fix(aws: Aws) -> None:
    account_ready(
        name="ubuntu/images/hvm-ssd/ubuntu-noble-24.04-amd64-server-20261120", bootstrap_version="5"
    )
    aws.reservation(
        AvailabilityZone="us-east-2b",
        State="payment-failed",
        EndDate=datetime(2027, 6, 21, 11, 30, tzinfo=UTC),
    )
    aws.quota(value=8.0)
    result = run()
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    reservation = table["reservation gpu"]
    assert reservation.startswith("FAIL")
    assert "is in us-east-2b" in reservation and "set availability_zone: us-east-2b" in reservation
    assert "payment-failed" in reservation and "runs 2027-06-07T11:30Z to 2027-06-21T11:30Z" in reservation
    assert "copy its start and end into compute_groups.0.capacity" in reservation
    assert table["quota Standard"].startswith("FAIL") and "L-1216C47A" in table["quota Standard"]
    assert table["AMI"].startswith("FAIL") and "gpucluster ami pin" in table["AMI"]
    assert table["CDK bootstrap"].startswith("FAIL") and "npx cdk bootstrap" in table["CDK bootstrap"]
    assert table["credentials"].startswith("pass")


def test_missing_bootstrap_stack_and_reservation(aws: Aws) -> None:
    aws.ec2_stub.add_client_error(
        "describe_capacity_reservations", "InvalidCapacityReservationId.NotFound", "not found"
    )
    aws.quota()
    result = run()
    assert result.exit_code == 1
    table = rows(result.stdout)
    assert "no CDKToolkit stack in us-east-2" in table["CDK bootstrap"]
    assert "InvalidCapacityReservationId.NotFound" in table["reservations"]
    assert "ParameterNotFound" in table["AMI"]


def test_expired_credentials_fail_once_and_skip_the_rest(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    sts = boto3.client("sts", region_name=REGION)
    stub = Stubber(sts)
    stub.add_client_error(
        "get_caller_identity", "ExpiredToken", "The security token included in the request is expired"
    )
    stub.activate()
    make = clients.make_client
    monkeypatch.setattr(
        clients, "make_client", lambda service, region: sts if service == "sts" else make(service, region)
    )
    result = run()
    assert result.exit_code == 1
    table = rows(result.stdout)
    assert table["credentials"].startswith("FAIL") and "session expired" in table["credentials"]
    assert [name for name, row in table.items() if row.startswith("skip")] == [
        "region and AZ",
        "instance types",
        "reservations",
        "quotas",
        "AMI",
        "CDK bootstrap",
        "network",
        "accounting database",
    ]


def test_an_invalid_config_exits_2(tmp_path: Path, aws: Aws) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(EXAMPLE.read_text().replace("count: 2", "count: 0"))
    result = run(bad)
    assert result.exit_code == 2
    assert "compute_groups.0.count" in result.stderr


def test_an_existing_subnet_in_another_az_fails(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota()
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.1.0.0/28", AvailabilityZone="us-east-2b")["Subnet"]
    config = tmp_path / "existing.yaml"
    config.write_text(
        EXAMPLE.read_text().replace("  vpc_id: null", f"  vpc_id: {vpc}\n  subnet_id: {subnet['SubnetId']}")
    )
    result = run(config)
    assert result.exit_code == 1, result.output
    network = [row for name, row in rows(result.stdout).items() if name == "network"]
    assert network and network[0].startswith("FAIL")
    assert f"{subnet['SubnetId']} is in us-east-2b, not us-east-2a" in result.stdout


def _existing_subnet(tmp_path: Path, cidr: str, login_nodes: int) -> tuple[Path, str]:
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.1.0.0/16")["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock=cidr, AvailabilityZone="us-east-2a")["Subnet"]["SubnetId"]
    config = tmp_path / "existing.yaml"
    text = EXAMPLE.read_text().replace("  vpc_id: null", f"  vpc_id: {vpc}\n  subnet_id: {subnet}")
    config.write_text(text.replace("login_nodes:\n  count: 1", f"login_nodes:\n  count: {login_nodes}"))
    return config, subnet


def test_an_existing_subnet_must_hold_every_address_the_cluster_takes(tmp_path: Path, aws: Aws) -> None:
    # A /28 has 11 free addresses. The example takes 11: head 2, login 1, 2 p5 nodes (their
    # 32 efa-only interfaces take none), FSx 5, EFS 1. Three login nodes make it 13.
    account_ready()
    aws.reservation()
    aws.quota()
    config, subnet = _existing_subnet(tmp_path, "10.1.0.0/28", login_nodes=1)
    result = run(config)
    assert result.exit_code == 0, result.output
    assert "11 free addresses, the cluster needs 11" in rows(result.stdout)["network"]
    config, subnet = _existing_subnet(tmp_path, "10.1.1.0/28", login_nodes=3)
    result = run(config)
    assert result.exit_code == 1, result.output
    network = rows(result.stdout)["network"]
    assert network.startswith("FAIL")
    assert (
        f"{subnet} (10.1.1.0/28) has 11 free addresses, the cluster needs 13: head 2 (the new one "
        "starts before the old one stops), login 3, group gpu 2 (2 nodes x 1), FSx 5 (estimate), "
        "EFS mount target 1"
    ) in network
    assert "use a subnet with 13 free addresses (a /27 or larger holds them)" in network


def test_instance_type_offerings_are_read_to_the_last_page(aws: Aws) -> None:
    account_ready()
    aws.ec2_stubbed.add("describe_instance_type_offerings")
    ask = {
        "LocationType": "availability-zone",
        "Filters": [
            {"Name": "location", "Values": ["us-east-2a"]},
            {"Name": "instance-type", "Values": ["m7i.2xlarge", "m7i.xlarge", "p5.48xlarge"]},
        ],
    }
    offered = [
        {"InstanceType": t, "LocationType": "availability-zone", "Location": "us-east-2a"}
        for t in ("m7i.2xlarge", "m7i.xlarge")
    ]
    aws.ec2_stub.add_response(
        "describe_instance_type_offerings", {"InstanceTypeOfferings": offered[:1], "NextToken": "p"}, ask
    )
    aws.ec2_stub.add_response(
        "describe_instance_type_offerings", {"InstanceTypeOfferings": offered[1:]}, {**ask, "NextToken": "p"}
    )
    aws.reservation()
    aws.quota()
    result = run()
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    # Both pages read: the head's and the login's types pass; the empty answer for p5 fails.
    assert table["m7i.2xlarge in AZ"].startswith("pass") and table["m7i.xlarge in AZ"].startswith("pass")
    assert (
        table["p5.48xlarge in AZ"].startswith("FAIL")
        and "not offered in us-east-2a" in table["p5.48xlarge in AZ"]
    )


def test_a_pinned_ami_of_another_dlami_than_the_parameter_fails(tmp_path: Path, aws: Aws) -> None:
    account_ready()  # the parameter names a Base OSS DLAMI of 20261120
    ec2 = boto3.client("ec2", region_name=REGION)
    base = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=base, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    pytorch = "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.7 (Ubuntu 24.04) 20261101"
    other = ec2.create_image(InstanceId=instance, Name=pytorch)["ImageId"]
    older = ec2.create_image(InstanceId=instance, Name=DLAMI_NAME.replace("20261120", "20261001"))["ImageId"]
    outputs = {}
    for pinned in (other, older):
        aws.reservation()
        aws.quota()
        config = tmp_path / f"{pinned}.yaml"
        config.write_text(EXAMPLE.read_text().replace("  ami_id: null", f"  ami_id: {pinned}"))
        outputs[pinned] = run(config).stdout
    # An older release of the same DLAMI is what pinning is for; another DLAMI is not.
    assert rows(outputs[older])["AMI"].startswith("pass")
    assert rows(outputs[other])["AMI"].startswith("FAIL")
    assert (
        "image.ssm_parameter names 'Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04)' images"
        in " ".join(outputs[other].split())
    )


def test_a_pinned_ami_the_account_cannot_see_fails_with_its_fix(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota()
    config = tmp_path / "gone.yaml"
    config.write_text(EXAMPLE.read_text().replace("  ami_id: null", "  ami_id: ami-0123456789abcdef0"))
    result = run(config)
    assert result.exit_code == 1
    assert rows(result.stdout)["AMI"].startswith("FAIL")
    flat = " ".join(result.stdout.split())
    assert "ami-0123456789abcdef0 does not exist in us-east-2 or is not shared with the account" in flat

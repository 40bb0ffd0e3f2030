"""`gpucluster preflight`: moto for STS, EC2 describes, SSM and CloudFormation; Stubber for
capacity reservations and Service Quotas (moto lacks both). Exit 0 / 1 / 2."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws
from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from gpucluster.config.image import DLAMI_UBUNTU_2404
from gpucluster.preflight.quotas import family
from tests.moto_models import publish_public_parameter

REGION = "us-east-2"
EXAMPLE = Path(__file__).parents[2] / "examples" / "default.yaml"
RESERVATION = "cr-0a1b2c3d4e5f67890"
DLAMI_NAME = "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) 20261120"


class SplitClient:
    """A moto-backed client whose calls in `stubbed` go to a Stubber instead."""

    def __init__(self, real: Any, stubbed: Any, operations: set[str]) -> None:
        self._real, self._stubbed, self._operations = real, stubbed, operations

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stubbed if name in self._operations else self._real, name)

    def get_paginator(self, name: str) -> Any:
        return (self._stubbed if name in self._operations else self._real).get_paginator(name)


class Aws:
    def __init__(self) -> None:
        def fake(service: str) -> Any:
            return boto3.client(service, region_name=REGION)  # type: ignore[call-overload]

        self.ec2_stub = Stubber(fake("ec2"))
        self.quota_stub = Stubber(fake("service-quotas"))
        self.ec2_stub.activate()
        self.quota_stub.activate()
        # EC2 calls answered by the Stubber; the rest go to moto.
        self.ec2_stubbed = {"describe_capacity_reservations"}

    def client(self, service: str, region: str) -> Any:
        real = boto3.client(service, region_name=region)  # type: ignore[call-overload]
        if service == "ec2":
            return SplitClient(real, self.ec2_stub.client, self.ec2_stubbed)
        if service == "service-quotas":
            return self.quota_stub.client
        return real

    def reservation(self, **changes: Any) -> None:
        raw = {
            "CapacityReservationId": RESERVATION,
            "InstanceType": "p5.48xlarge",
            "InstancePlatform": "Linux/UNIX",
            "AvailabilityZone": "us-east-2a",
            "TotalInstanceCount": 2,
            "State": "scheduled",
            "ReservationType": "capacity-block",
            "StartDate": datetime(2027, 6, 7, 11, 30, tzinfo=UTC),
            "EndDate": datetime(2027, 6, 14, 11, 30, tzinfo=UTC),
        }
        self.ec2_stub.add_response(
            "describe_capacity_reservations",
            # A change to None leaves the field out (an ODCR has no dates).
            {"CapacityReservations": [{k: v for k, v in {**raw, **changes}.items() if v is not None}]},
            {"CapacityReservationIds": [RESERVATION]},
        )

    def quota(self, value: float = 64.0, code: str = "L-1216C47A") -> None:
        # Standard: head m7i.2xlarge (8) + login m7i.xlarge (4); a block's p5 nodes are not counted.
        self.quota_stub.add_response(
            "get_service_quota",
            {"Quota": {"QuotaCode": code, "Value": value}},
            {"ServiceCode": "ec2", "QuotaCode": code},
        )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch):
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        fake = Aws()
        monkeypatch.setattr(clients, "make_client", fake.client)
        yield fake
        fake.ec2_stub.assert_no_pending_responses()
        fake.quota_stub.assert_no_pending_responses()


def account_ready(name: str = DLAMI_NAME, bootstrap_version: str = "21") -> None:
    ec2 = boto3.client("ec2", region_name=REGION)
    base = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    instance = ec2.run_instances(ImageId=base, MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    ami = ec2.create_image(InstanceId=instance, Name=name)["ImageId"]
    publish_public_parameter("123456789012", REGION, DLAMI_UBUNTU_2404, ami)
    template = {
        "Resources": {"Staging": {"Type": "AWS::S3::Bucket"}},
        "Outputs": {"BootstrapVersion": {"Value": bootstrap_version}},
    }
    boto3.client("cloudformation", region_name=REGION).create_stack(
        StackName="CDKToolkit", TemplateBody=json.dumps(template)
    )


def run(config: Path = EXAMPLE):
    return CliRunner().invoke(app, ["preflight", str(config)])


def rows(output: str) -> dict[str, str]:
    found = {}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 3 and cells[1] in ("pass", "FAIL", "skip"):
            found[cells[2]] = " | ".join(cells[1:])
    return found


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


def test_instance_families_map_to_their_quota() -> None:
    assert [family(t) for t in ("p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "g6e.48xlarge")] == [
        "P",
        "P",
        "P",
        "G",
    ]
    assert [family(t) for t in ("vt1.3xlarge", "trn2.48xlarge", "inf2.48xlarge", "dl1.24xlarge")] == [
        "G",
        "Trn",
        "Inf",
        "DL",
    ]
    assert [family(t) for t in ("m7i.2xlarge", "c7i.large", "hpc7a.96xlarge", "x2idn.32xlarge")] == [
        "Standard",
        "Standard",
        "HPC",
        "X",
    ]
    assert family("u-6tb1.112xlarge") == "High Memory" and family("mac2.metal") == "Standard"
    assert family("") is None


def odcr_config(tmp_path: Path) -> Path:
    """The example with its group on an ODCR instead of a Capacity Block."""
    text = EXAMPLE.read_text()
    block = text[text.index("      type: capacity-block") : text.index("storage:")]
    config = tmp_path / "odcr.yaml"
    config.write_text(text.replace(block, f"      type: odcr\n      reservation_id: {RESERVATION}\n"))
    return config


def test_odcr_nodes_count_against_the_p_quota_with_its_fix(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation(ReservationType="default", State="active", StartDate=None, EndDate=None)
    # Quotas are read in the order of their family names: P, then Standard.
    # 2 x p5.48xlarge at 192 vCPUs each (the catalog's figure): 384 vCPUs, the quota allows 192.
    aws.quota(192.0, "L-417A185B")
    aws.quota()
    result = run(odcr_config(tmp_path))
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    assert table["quota P"].startswith("FAIL")
    assert table["reservation gpu"].startswith("pass") and table["quota Standard"].startswith("pass")
    flat = " ".join(result.stdout.split())
    assert "gpu 2 x p5.48xlarge = 384" in flat
    assert (
        "request an increase in Service Quotas: Running On-Demand P instances (L-417A185B) in "
        "us-east-2, to at least 384 vCPUs"
    ) in flat


def test_a_quota_never_applied_is_read_from_the_aws_default(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation(ReservationType="default", State="active", StartDate=None, EndDate=None)
    aws.quota_stub.add_client_error(
        "get_service_quota",
        "NoSuchResourceException",
        "The request failed because the specified service quota does not exist.",
        expected_params={"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    aws.quota_stub.add_response(
        "get_aws_default_service_quota",
        {"Quota": {"QuotaCode": "L-417A185B", "Value": 384.0}},
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    aws.quota()
    result = run(odcr_config(tmp_path))
    assert result.exit_code == 0, result.output
    assert rows(result.stdout)["quota P"].startswith("pass")


def test_a_refused_quota_call_is_one_failed_row(aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota_stub.add_client_error(
        "get_service_quota", "AccessDeniedException", "not authorized to perform GetServiceQuota"
    )
    result = run()
    assert result.exit_code == 1
    quota = rows(result.stdout)["quotas"]
    assert quota.startswith("FAIL") and "servicequotas:GetServiceQuota" in quota
    assert "Traceback" not in result.output


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


def test_an_instance_type_ec2_does_not_know_fails_the_quota_rows_with_its_message(
    tmp_path: Path, aws: Aws
) -> None:
    account_ready()
    aws.reservation()
    config = tmp_path / "typo.yaml"
    config.write_text(EXAMPLE.read_text().replace("instance_type: m7i.2xlarge", "instance_type: m7q.2xlarge"))
    result = run(config)
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    assert table["quotas"].startswith("FAIL") and "ec2:DescribeInstanceTypes" in table["quotas"]
    assert table["m7q.2xlarge in AZ"].startswith("FAIL")


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

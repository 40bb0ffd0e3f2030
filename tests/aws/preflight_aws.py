"""The preflight tests' AWS: moto for STS, EC2 describes, SSM and CloudFormation; a Stubber
for capacity reservations, Service Quotas and RDS (moto lacks the first two and RDS's
orderable options and account quotas), and the EC2 calls a test names in `Aws.ec2_stubbed`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from gpucluster.config.image import DLAMI_UBUNTU_2404
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
        self.rds_stub = Stubber(fake("rds"))
        self.ec2_stub.activate()
        self.quota_stub.activate()
        self.rds_stub.activate()
        # EC2 calls answered by the Stubber; the rest go to moto.
        self.ec2_stubbed = {"describe_capacity_reservations"}

    def client(self, service: str, region: str) -> Any:
        real = boto3.client(service, region_name=region)  # type: ignore[call-overload]
        if service == "ec2":
            return SplitClient(real, self.ec2_stub.client, self.ec2_stubbed)
        if service == "service-quotas":
            return self.quota_stub.client
        if service == "rds":
            return self.rds_stub.client
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
def aws(moto_aws: None, monkeypatch: pytest.MonkeyPatch):
    fake = Aws()
    monkeypatch.setattr(clients, "make_client", fake.client)
    yield fake
    fake.ec2_stub.assert_no_pending_responses()
    fake.quota_stub.assert_no_pending_responses()
    fake.rds_stub.assert_no_pending_responses()


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


def odcr_config(tmp_path: Path) -> Path:
    """The example with its group on an ODCR instead of a Capacity Block."""
    text = EXAMPLE.read_text()
    block = text[text.index("      type: capacity-block") : text.index("storage:")]
    config = tmp_path / "odcr.yaml"
    config.write_text(text.replace(block, f"      type: odcr\n      reservation_id: {RESERVATION}\n"))
    return config

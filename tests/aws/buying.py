"""What the buy and extend tests share: a remembered offering, a purchase that succeeds, the
commented config and a config that has bought its block."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.capacity import offerings
from gpucluster.cli import app
from tests.aws.config_text import COMMENTED_CONFIG
from tests.aws.stubs import StubbedAws

START = datetime(2027, 6, 7, 11, 30, tzinfo=UTC)
END = datetime(2027, 6, 14, 11, 30, tzinfo=UTC)
OFFERING = "cb-0123456789abcdef0"
RESERVATION = "cr-0fedcba9876543210"


def run(*args: str, input: str | None = None):  # noqa: A002 - CliRunner's name
    return CliRunner().invoke(app, list(args), input=input)


def remember(region: str = "us-east-2", az: str = "us-east-2b", count: int = 2) -> None:
    offerings.remember(
        [
            offerings.Offering(
                OFFERING, region, az, "p5.48xlarge", count, START, END, 168, Decimal("64512.00"), "USD"
            )
        ]
    )


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(COMMENTED_CONFIG)
    return path


def purchase_ok(aws: StubbedAws) -> None:
    aws.ec2().add_response(
        "purchase_capacity_block",
        {
            "CapacityReservation": {
                "CapacityReservationId": RESERVATION,
                "AvailabilityZone": "us-east-2b",
                "StartDate": START,
                "EndDate": END,
                "State": "payment-pending",
            }
        },
        {"CapacityBlockOfferingId": OFFERING, "InstancePlatform": "Linux/UNIX"},
    )


def bought_config(config: Path, aws: StubbedAws) -> None:
    remember()
    purchase_ok(aws)
    assert run("capacity", "buy", OFFERING, "--config", str(config), "--yes").exit_code == 0

"""When AWS does not answer: an endpoint the user set is named with its setting (not the
region), preflight says once that AWS cannot be reached, `capacity find` reports every
region, and `capacity wait` retries within its --timeout. Endpoints are refused on
127.0.0.1 port 1 or by botocore's before-send event: nothing reaches a network."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore import endpoint
from botocore.awsrequest import AWSResponse
from botocore.exceptions import EndpointConnectionError
from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from tests.aws.login import workstation
from tests.aws.stubs import StubbedAws
from tests.aws.test_verb_errors import EXAMPLE, THROTTLED, Body

__all__ = ["workstation"]
REFUSED = "http://127.0.0.1:1"
RESERVATION = "cr-0123456789abcdef0"
FIND = ["capacity", "find", "--instance-type", "p5.48xlarge", "--count", "2", "--days", "7"]


@pytest.fixture
def keys(workstation: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Working static keys, and botocore's retry pauses skipped."""
    workstation.write_text("[default]\n")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setattr(endpoint.time, "sleep", lambda seconds: None)
    yield


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_EC2"])
def test_an_endpoint_override_that_refuses_is_named_not_the_region(
    keys: None, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, REFUSED)
    result = run("capacity", "show", RESERVATION, "--region", "us-east-2")
    assert result.exit_code == 1, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error aws ec2:DescribeCapacityReservations (us-east-2): cannot connect to {REFUSED}/, "
        f"the endpoint {variable} sets; "
    ), line
    assert f"unset {variable}" in line and "region name" not in line


def test_without_an_override_a_refused_endpoint_blames_network_and_region(keys: None) -> None:
    from gpucluster.aws.errors import explain

    failure = explain(
        "ec2:DescribeCapacityReservations",
        "us-east-9",
        EndpointConnectionError(endpoint_url="https://ec2.us-east-9.amazonaws.com/"),
    )
    assert failure.kind == "network"
    assert "cannot connect to https://ec2.us-east-9.amazonaws.com/; check your network" in failure.line
    assert "us-east-9 is a region name" in failure.line


def test_preflight_says_once_that_aws_cannot_be_reached(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster.config.loader import load_config
    from gpucluster.preflight.result import FAIL, SKIP
    from gpucluster.preflight.run import preflight

    monkeypatch.setenv("AWS_ENDPOINT_URL", REFUSED)
    credentials, *others = preflight(load_config(EXAMPLE))
    assert credentials.status == FAIL
    assert "cannot connect to http://127.0.0.1:1/, the endpoint AWS_ENDPOINT_URL sets" in credentials.detail
    assert {(row.status, row.detail) for row in others} == {
        (SKIP, "not run: AWS cannot be reached (see credentials)")
    }


def _offering(region: str, offering_id: str) -> dict[str, Any]:
    start = datetime(2027, 6, 7, 11, 30, tzinfo=UTC)
    return {
        "CapacityBlockOfferingId": offering_id,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": f"{region}a",
        "InstanceCount": 2,
        "StartDate": start,
        "EndDate": start + timedelta(days=7),
        "CapacityBlockDurationHours": 168,
        "UpfrontFee": "1000.00",
        "CurrencyCode": "USD",
    }


def test_find_reports_every_region_when_one_cannot_be_reached(
    aws: StubbedAws, keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stubbed = clients.make_client

    def client(service: Any, region: str) -> Any:
        if region == "us-west-2":  # this region's endpoint refuses the connection
            return boto3.client("ec2", region_name=region, endpoint_url=REFUSED)
        return stubbed(service, region)

    monkeypatch.setattr(clients, "make_client", client)
    for region, offering in (("us-east-2", "cb-0aaaaaaaaaaaaaaa1"), ("eu-west-1", "cb-0bbbbbbbbbbbbbbb2")):
        aws.ec2(region).add_response(
            "describe_capacity_block_offerings", {"CapacityBlockOfferings": [_offering(region, offering)]}
        )
    result = run(*FIND, "--region", "us-east-2", "--region", "us-west-2", "--region", "eu-west-1")
    assert result.exit_code == 1, result.output
    assert "cb-0aaaaaaaaaaaaaaa1" in result.stdout and "cb-0bbbbbbbbbbbbbbb2" in result.stdout
    (line,) = result.stderr.splitlines()
    assert line.startswith("error aws ec2:DescribeCapacityBlockOfferings (us-west-2): cannot connect to")


ACTIVE = (
    b'<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
    b"<requestId>r</requestId><capacityReservationSet><item>"
    b"<capacityReservationId>cr-0123456789abcdef0</capacityReservationId>"
    b"<state>active</state><availabilityZone>us-east-2a</availabilityZone>"
    b"</item></capacityReservationSet></DescribeCapacityReservationsResponse>"
)


def _flaky_ec2(monkeypatch: pytest.MonkeyPatch, failures: int) -> list[int]:
    """EC2 whose first `failures` requests get no connection, and which then answers 'active'."""
    sent: list[int] = []
    ec2 = clients._boto3_client("ec2", "us-east-2")  # the real factory: its retries and timeouts

    def answer(request: Any, **_: object) -> AWSResponse:
        sent.append(1)
        if len(sent) <= failures:
            raise EndpointConnectionError(endpoint_url="https://ec2.us-east-2.amazonaws.com/")
        return AWSResponse(request.url, 200, {}, Body(ACTIVE))

    ec2.meta.events.register("before-send.ec2.DescribeCapacityReservations", answer)
    monkeypatch.setattr(clients, "make_client", lambda service, region: ec2)
    return sent


def test_wait_retries_a_network_failure_within_its_timeout(
    keys: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One whole call (botocore's 5 attempts) gets no connection, the next is answered;
    # `keys` made time.sleep return at once.
    sent = _flaky_ec2(monkeypatch, failures=5)
    result = run("capacity", "wait", RESERVATION, "--region", "us-east-2", "--poll", "5")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "ec2:DescribeCapacityReservations (us-east-2): cannot connect to" in lines[0]
    assert "retrying in 5 s (until the --timeout of 0:30:00)" in lines[0]
    assert f"{RESERVATION} active" in lines[1] and "active: every reservation can launch" in lines[2]
    assert len(lines) == 3 and len(sent) == 6


def test_wait_gives_up_on_the_network_at_its_timeout(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpucluster.aws.clients import Clients
    from gpucluster.aws.errors import AwsError
    from gpucluster.capacity.reservations import wait_active

    _flaky_ec2(monkeypatch, failures=1000)
    now = [0.0]
    retries: list[float] = []
    with pytest.raises(AwsError, match="cannot connect to") as caught:
        wait_active(
            Clients(),
            "us-east-2",
            [RESERVATION],
            timedelta(seconds=70),
            timedelta(seconds=30),
            lambda current: None,
            lambda seconds: now.__setitem__(0, now[0] + seconds),
            lambda: now[0],
            on_retry=lambda failure, pause: retries.append(pause),
        )
    assert caught.value.kind == "network"
    assert retries == [30.0, 30.0, 10.0]  # bounded: the last pause is cut to the deadline


def test_wait_does_not_retry_what_aws_answered(keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    ec2 = clients._boto3_client("ec2", "us-east-2")
    ec2.meta.events.register(
        "before-send.ec2.DescribeCapacityReservations",
        lambda request, **_: AWSResponse(request.url, 400, {}, Body(THROTTLED)),
    )
    monkeypatch.setattr(clients, "make_client", lambda service, region: ec2)
    result = run("capacity", "wait", RESERVATION, "--region", "us-east-2")
    assert result.exit_code == 1
    assert "retrying" not in result.stdout
    assert result.stderr.startswith(
        "error aws ec2:DescribeCapacityReservations (us-east-2): RequestLimitExceeded"
    )

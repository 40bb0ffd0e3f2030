"""Every AWS failure becomes one line naming the call, the region and the fix."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import EndpointConnectionError, NoCredentialsError
from botocore.stub import Stubber

from gpucluster.aws import clients
from gpucluster.aws.errors import AwsError, aws_call

CALL = "ec2:DescribeCapacityReservations"


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        ("ExpiredToken", "session expired"),
        ("RequestExpired", "session expired"),
        ("AuthFailure", "credentials are not valid"),
        ("UnauthorizedOperation", f"may not call {CALL}"),
        ("AccessDeniedException", f"may not call {CALL}"),
        ("RequestLimitExceeded", "throttled"),
        ("OptInRequired", "enable the region"),
        ("InsufficientInstanceCapacity", "no capacity"),
        ("InvalidParameterValue", "see AWS's message"),
    ],
)
def test_client_errors_name_call_and_fix(code: str, fix: str) -> None:
    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="y")
    with Stubber(ec2) as stub:
        stub.add_client_error("describe_capacity_reservations", code, "the message\nsecond line")
        with pytest.raises(AwsError) as caught, aws_call(CALL, "us-east-2"):
            ec2.describe_capacity_reservations()
    line = caught.value.line
    assert line.startswith(f"aws {CALL} (us-east-2): {code}: the message second line; ")
    assert fix in line
    assert "\n" not in line


def test_no_credentials_and_no_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_PROFILE", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_ENDPOINT_URL_EC2", raising=False)
    with (
        pytest.raises(AwsError, match="no AWS credentials found for profile default; run `aws configure`"),
        aws_call(CALL, "eu-west-1"),
    ):
        raise NoCredentialsError()
    with (
        pytest.raises(
            AwsError,
            match="cannot connect to https://ec2.xx-east-9.amazonaws.com; check your network connection, "
            "and that xx-east-9 is a region name",
        ),
        aws_call(CALL, "xx-east-9"),
    ):
        raise EndpointConnectionError(endpoint_url="https://ec2.xx-east-9.amazonaws.com")


def test_other_exceptions_pass_through() -> None:
    with pytest.raises(KeyError), aws_call(CALL, "us-east-2"):
        raise KeyError("a bug stays a bug")


def test_clients_use_standard_retries_and_are_made_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, str]] = []
    monkeypatch.setattr(
        clients, "make_client", lambda service, region: made.append((service, region)) or object()
    )
    pool = clients.Clients()
    assert pool.get("ec2", "us-east-2") is pool.get("ec2", "us-east-2")
    pool.get("ec2", "us-west-2")
    assert made == [("ec2", "us-east-2"), ("ec2", "us-west-2")]
    assert clients.AWS_CONFIG.retries == {"mode": "standard", "total_max_attempts": 5}

"""Every verb that calls AWS turns each failure the issue names (expired token, access
denied, throttling, a region not enabled, no capacity) into one line that names the call
and the fix, exit 1, no traceback, and leaves the config as it was; and the clients
retry throttling themselves first (botocore's standard retry mode)."""

from __future__ import annotations

from pathlib import Path

import pytest
from botocore.awsrequest import AWSResponse
from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from tests.aws.config_text import COMMENTED_CONFIG
from tests.aws.stubs import StubbedAws

EXAMPLE = Path(__file__).parents[2] / "examples" / "default.yaml"
FAILURES = [
    ("ExpiredToken", "your AWS session expired"),
    ("UnauthorizedOperation", "your IAM identity may not call"),
    ("RequestLimitExceeded", "AWS throttled the call even after retries"),
    ("OptInRequired", "enable the region (opt-in)"),
    ("InsufficientInstanceCapacity", "AWS has no capacity for it now"),
]


def verbs(commented: Path, example: Path) -> dict[str, tuple[list[str], str, str, str]]:
    """Verb -> (arguments, service, first operation, IAM action it is named by)."""
    find = ["capacity", "find", "--instance-type", "p5.48xlarge", "--count", "2", "--days", "7"]
    by_config = ["--config", str(example)]
    return {
        "find": (
            [*find, "--region", "us-east-2"],
            "ec2",
            "describe_capacity_block_offerings",
            "ec2:DescribeCapacityBlockOfferings",
        ),
        "buy": (
            ["capacity", "buy", "cb-0123456789abcdef0", "--config", str(commented), "--group", "train"]
            + ["--days", "7", "--yes"],
            "ec2",
            "describe_capacity_block_offerings",
            "ec2:DescribeCapacityBlockOfferings",
        ),
        "show": (
            ["capacity", "show", *by_config],
            "ec2",
            "describe_capacity_reservations",
            "ec2:DescribeCapacityReservations",
        ),
        "wait": (
            ["capacity", "wait", *by_config],
            "ec2",
            "describe_capacity_reservations",
            "ec2:DescribeCapacityReservations",
        ),
        "extend": (
            ["capacity", "extend", *by_config, "--days", "7", "--yes"],
            "ec2",
            "describe_capacity_block_extension_offerings",
            "ec2:DescribeCapacityBlockExtensionOfferings",
        ),
        "ami pin": (["ami", "pin", str(commented)], "ssm", "get_parameter", "ssm:GetParameter"),
    }


@pytest.mark.parametrize("verb", ["find", "buy", "show", "wait", "extend", "ami pin"])
@pytest.mark.parametrize(("code", "fix"), FAILURES)
def test_each_failure_of_each_verb_is_one_line(
    aws: StubbedAws, tmp_path: Path, verb: str, code: str, fix: str
) -> None:
    commented = tmp_path / "commented.yaml"
    commented.write_text(COMMENTED_CONFIG)
    example = tmp_path / "example.yaml"
    example.write_text(EXAMPLE.read_text())
    arguments, service, operation, action = verbs(commented, example)[verb]
    aws.stub(service, "us-east-2").add_client_error(operation, code, "the message")
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1, result.output
    (line,) = [line for line in result.stderr.splitlines() if not line.startswith("warning ")]
    assert line.startswith(f"error aws {action} (us-east-2): {code}: the message; "), line
    assert fix in line
    assert "Traceback" not in result.output
    assert commented.read_text() == COMMENTED_CONFIG and example.read_text() == EXAMPLE.read_text()


class Body:
    """What AWSResponse reads a body from."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> list[bytes]:
        return [self.data]


THROTTLED = (
    b"<Response><Errors><Error><Code>RequestLimitExceeded</Code><Message>slow down</Message>"
    b"</Error></Errors><RequestID>r</RequestID></Response>"
)
EMPTY = (
    b'<DescribeCapacityReservationsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/">'
    b"<requestId>r</requestId><capacityReservationSet/></DescribeCapacityReservationsResponse>"
)


@pytest.mark.parametrize(("throttled", "answered"), [(2, True), (5, False)])
def test_the_clients_retry_throttling_before_giving_up(
    monkeypatch: pytest.MonkeyPatch, throttled: int, answered: bool
) -> None:
    from botocore import endpoint

    from gpucluster.aws.errors import AwsError, aws_call

    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setattr(endpoint.time, "sleep", lambda seconds: None)
    ec2 = clients._boto3_client("ec2", "us-east-2")  # the real factory, its retry settings
    sent: list[int] = []

    def answer(request, **_: object) -> AWSResponse:
        sent.append(1)
        if len(sent) <= throttled:
            return AWSResponse(request.url, 400, {}, Body(THROTTLED))
        return AWSResponse(request.url, 200, {}, Body(EMPTY))

    ec2.meta.events.register("before-send.ec2.DescribeCapacityReservations", answer)
    call = "ec2:DescribeCapacityReservations"
    if answered:
        with aws_call(call, "us-east-2"):
            assert ec2.describe_capacity_reservations()["CapacityReservations"] == []
        assert len(sent) == throttled + 1
    else:
        with (
            pytest.raises(AwsError, match="throttled the call even after retries"),
            aws_call(call, "us-east-2"),
        ):
            ec2.describe_capacity_reservations()
        assert len(sent) == 5  # total_max_attempts: the first call and four retries

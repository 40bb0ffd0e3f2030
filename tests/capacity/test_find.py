"""`capacity find`: offerings of several regions, paginated, sorted, priced per GPU-hour;
bad sizes refused before any call; AWS failures one line, exit 1."""

from __future__ import annotations

from datetime import UTC, datetime

from typer.testing import CliRunner

from gpucluster.capacity import offerings
from gpucluster.cli import app
from tests.aws.stubs import StubbedAws


def run(*args: str, input: str | None = None):  # noqa: A002 - CliRunner's name
    return CliRunner().invoke(app, list(args), input=input)


def raw_offering(offering_id: str, az: str, day: int, fee: str) -> dict:
    return {
        "CapacityBlockOfferingId": offering_id,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": az,
        "InstanceCount": 2,
        "StartDate": datetime(2027, 6, day, 11, 30, tzinfo=UTC),
        "EndDate": datetime(2027, 6, day + 2, 11, 30, tzinfo=UTC),
        "CapacityBlockDurationHours": 48,
        "UpfrontFee": fee,
        "CurrencyCode": "USD",
    }


ASK = {"InstanceType": "p5.48xlarge", "InstanceCount": 2, "CapacityDurationHours": 48}
FIND = ("capacity", "find", "--instance-type", "p5.48xlarge", "--count", "2", "--days", "2")


def test_offerings_of_two_regions_paginated_and_sorted(aws: StubbedAws) -> None:
    east = aws.ec2("us-east-2")
    east.add_response(
        "describe_capacity_block_offerings",
        {
            "CapacityBlockOfferings": [raw_offering("cb-0aaaaaaaaaaaaaaa1", "us-east-2a", 9, "30000.00")],
            "NextToken": "t1",
        },
        ASK,
    )
    east.add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": [raw_offering("cb-0aaaaaaaaaaaaaaa2", "us-east-2b", 7, "36864.00")]},
        {**ASK, "NextToken": "t1"},
    )
    aws.ec2("us-west-2").add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": [raw_offering("cb-0bbbbbbbbbbbbbbb1", "us-west-2c", 7, "30720.00")]},
        ASK,
    )
    result = run(
        *FIND,
        "--region",
        "us-east-2",
        "--region",
        "us-west-2",
    )
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if "cb-0" in line]
    # Soonest first; on the same start the cheaper one first.
    assert [line.split()[1] for line in lines] == [
        "cb-0bbbbbbbbbbbbbbb1",
        "cb-0aaaaaaaaaaaaaaa2",
        "cb-0aaaaaaaaaaaaaaa1",
    ]
    # 2 x p5.48xlarge (8 GPUs) x 48 h = 768 GPU-hours: 30,720 USD is 40 per GPU-hour.
    assert "30,720.00" in lines[0] and "40.0000" in lines[0] and "us-west-2c" in lines[0]
    assert "48.0000" in lines[1]
    # The cache lets `capacity buy` show what an id costs.
    assert offerings.recall("cb-0aaaaaaaaaaaaaaa2").region == "us-east-2"


def test_dates_are_passed_as_utc(aws: StubbedAws) -> None:
    aws.ec2().add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": []},
        {
            **ASK,
            "StartDateRange": datetime(2027, 6, 1, tzinfo=UTC),
            "EndDateRange": datetime(2027, 6, 30, 11, 30, tzinfo=UTC),
        },
    )
    result = run(
        *FIND,
        "--region",
        "us-east-2",
        "--start-after",
        "2027-06-01",
        "--end-before",
        "2027-06-30T11:30Z",
    )
    assert result.exit_code == 1
    assert "no Capacity Block offerings" in result.stdout


def test_sizes_ec2_does_not_sell_are_refused_before_any_call(aws: StubbedAws) -> None:
    base = ["capacity", "find", "--instance-type", "p5.48xlarge", "--region", "us-east-2"]
    for extra, field in (
        (["--count", "3", "--days", "2"], "--count: 3 instances is not a Capacity Block size"),
        (["--count", "2", "--days", "15"], "--days: 15 days is not a length EC2 sells"),
        (["--count", "2", "--days", "0"], "--days: 0 days"),
    ):
        result = run(*base, *extra)
        assert result.exit_code == 2, result.output
        assert field in result.stderr
    result = run(
        "capacity", "find", "--instance-type", "m7i.large", "--count", "1", "--days", "1", "--region", "x"
    )
    assert result.exit_code == 2 and "not in the GPU catalog" in result.stderr
    assert aws.made == []


def test_a_region_is_required(aws: StubbedAws) -> None:
    result = run("capacity", "find", "--instance-type", "p5.48xlarge", "--count", "2", "--days", "2")
    assert result.exit_code == 2
    assert "--region: no region given" in result.stderr


def test_throttling_and_expired_tokens_are_one_line_exit_1(aws: StubbedAws) -> None:
    for code, fix in (("RequestLimitExceeded", "throttled"), ("ExpiredToken", "session expired")):
        aws.ec2().add_client_error("describe_capacity_block_offerings", code, "nope")
        result = run(
            *FIND,
            "--region",
            "us-east-2",
        )
        assert result.exit_code == 1
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error aws ec2:DescribeCapacityBlockOfferings (us-east-2): {code}: nope; ")
        assert fix in line
        assert "Traceback" not in result.output

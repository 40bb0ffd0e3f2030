"""`capacity show` and `capacity wait`: reservations by config or id, paginated; a bounded
wait that ends at active, at a state that never becomes active, or at its timeout."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from typer.testing import CliRunner

from gpucluster.aws.clients import Clients
from gpucluster.capacity.reservations import wait_active
from gpucluster.cli import app
from tests.aws.stubs import StubbedAws

EXAMPLE = Path(__file__).parents[2] / "examples" / "default.yaml"
RESERVATION = "cr-0a1b2c3d4e5f67890"  # examples/default.yaml's block


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def raw(rid: str, state: str) -> dict:
    return {
        "CapacityReservationId": rid,
        "InstanceType": "p5.48xlarge",
        "InstancePlatform": "Linux/UNIX",
        "AvailabilityZone": "us-east-2a",
        "TotalInstanceCount": 2,
        "State": state,
        "ReservationType": "capacity-block",
        "StartDate": datetime(2027, 6, 7, 11, 30, tzinfo=UTC),
        "EndDate": datetime(2027, 6, 14, 11, 30, tzinfo=UTC),
    }


def test_show_reads_the_configs_reservations(aws: StubbedAws) -> None:
    aws.ec2().add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [raw(RESERVATION, "scheduled")]},
        {"CapacityReservationIds": [RESERVATION]},
    )
    result = run("capacity", "show", "--config", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stdout.splitlines() if RESERVATION in line]
    # GPUCLUSTER_NOW is 2026-12-01 in tests: the block starts 188 days and 11.5 hours later.
    assert "scheduled" in line and "2 x p5.48xlarge" in line and "starts in 188d 11h" in line


def test_show_by_id_follows_pages(aws: StubbedAws) -> None:
    ids = ["cr-01111111111111111", "cr-02222222222222222"]
    aws.ec2("eu-west-1").add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [raw(ids[1], "active")], "NextToken": "n"},
        {"CapacityReservationIds": ids},
    )
    aws.ec2("eu-west-1").add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [raw(ids[0], "expired")]},
        {"CapacityReservationIds": ids, "NextToken": "n"},
    )
    result = run("capacity", "show", *ids, "--region", "eu-west-1")
    assert result.exit_code == 0, result.output
    shown = [line for line in result.stdout.splitlines() if "cr-0" in line]
    assert [line.split()[1] for line in shown] == ids  # in the order asked


def test_show_not_found_is_one_line(aws: StubbedAws) -> None:
    aws.ec2().add_client_error(
        "describe_capacity_reservations", "InvalidCapacityReservationId.NotFound", "no such reservation"
    )
    result = run("capacity", "show", "cr-09999999999999999", "--region", "us-east-2")
    assert result.exit_code == 1
    assert result.stderr.startswith("error aws ec2:DescribeCapacityReservations (us-east-2): Invalid")


def test_show_needs_a_region_for_bare_ids(aws: StubbedAws) -> None:
    result = run("capacity", "show", "cr-09999999999999999")
    assert result.exit_code == 2
    assert "--region: no region given" in result.stderr


def test_wait_polls_until_active_within_its_bound(aws: StubbedAws) -> None:
    for state in ("payment-pending", "scheduled", "active"):
        aws.ec2().add_response(
            "describe_capacity_reservations", {"CapacityReservations": [raw(RESERVATION, state)]}
        )
    slept: list[float] = []
    seen: list[str] = []
    clock = iter(range(0, 1000, 10))
    result = wait_active(
        Clients(),
        "us-east-2",
        [RESERVATION],
        timedelta(minutes=5),
        timedelta(seconds=30),
        lambda current: seen.extend(r.state for r in current),
        slept.append,
        lambda: float(next(clock)),
    )
    assert result.done and seen == ["payment-pending", "scheduled", "active"]
    assert slept == [30.0, 30.0]


def test_wait_gives_up_at_the_timeout(aws: StubbedAws) -> None:
    for _ in range(3):
        aws.ec2().add_response(
            "describe_capacity_reservations", {"CapacityReservations": [raw(RESERVATION, "scheduled")]}
        )
    now = [0.0]
    result = wait_active(
        Clients(),
        "us-east-2",
        [RESERVATION],
        timedelta(seconds=50),
        timedelta(seconds=30),
        lambda current: None,
        lambda seconds: now.__setitem__(0, now[0] + seconds),
        lambda: now[0],
    )
    assert not result.done and not result.failed
    assert now[0] == 50.0  # the last sleep is cut to the deadline


def test_wait_stops_at_payment_failed(aws: StubbedAws) -> None:
    aws.ec2().add_response(
        "describe_capacity_reservations", {"CapacityReservations": [raw(RESERVATION, "payment-failed")]}
    )
    result = run("capacity", "wait", RESERVATION, "--region", "us-east-2")
    assert result.exit_code == 1
    assert f"{RESERVATION} is payment-failed" in result.stdout


def test_wait_for_a_reservation_ec2_does_not_list_stops_at_once(aws: StubbedAws) -> None:
    aws.ec2().add_response("describe_capacity_reservations", {"CapacityReservations": []})
    result = run("capacity", "wait", RESERVATION, "--region", "us-east-2")
    assert result.exit_code == 1
    assert f"{RESERVATION} not found in us-east-2" in " ".join(result.stdout.split())
    assert "timeout" not in result.stdout


def test_show_names_a_reservation_ec2_does_not_list(aws: StubbedAws) -> None:
    aws.ec2().add_response("describe_capacity_reservations", {"CapacityReservations": []})
    result = run("capacity", "show", "--config", str(EXAMPLE))
    assert result.exit_code == 1
    (line,) = [line for line in result.stdout.splitlines() if RESERVATION in line and "│" in line]
    assert "not found" in line
    assert f"not found in us-east-2: {RESERVATION}" in " ".join(result.stdout.split())


def test_wait_reads_every_page_before_it_says_active(aws: StubbedAws) -> None:
    ids = ["cr-01111111111111111", "cr-02222222222222222"]
    aws.ec2().add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [raw(ids[0], "active")], "NextToken": "n"},
        {"CapacityReservationIds": ids},
    )
    aws.ec2().add_response(
        "describe_capacity_reservations",
        {"CapacityReservations": [raw(ids[1], "active")]},
        {"CapacityReservationIds": ids, "NextToken": "n"},
    )
    result = run("capacity", "wait", *ids, "--region", "us-east-2")
    assert result.exit_code == 0, result.output
    assert f"{ids[0]} active, {ids[1]} active" in result.stdout

"""The AWS verbs' tables in both modes (tests/test_tables.py has the others): piped into a
file each row on one line, whole; on an 80-column terminal fitted to it, nothing cut."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from gpucluster.aws import clients
from gpucluster.cli import app
from tests.aws import preflight_aws
from tests.aws.buying import RESERVATION, bought_config, config
from tests.aws.stubs import StubbedAws
from tests.capacity.test_find import ASK, FIND, raw_offering
from tests.capacity.test_state import raw
from tests.table_text import PIPED, TERMINAL, assert_fits_terminal, assert_piped_whole

__all__ = ["config"]  # the fixture


def both(args: list[str], answers: Callable[[], None]) -> tuple[str, str]:
    """The verb's stdout piped, then on a terminal; `answers` queues AWS's replies for a run."""
    outputs = []
    for env in (PIPED, TERMINAL):
        answers()
        result = CliRunner().invoke(app, args, env=env)
        assert result.exit_code in (0, 1), result.output
        outputs.append(result.stdout)
    return outputs[0], outputs[1]


def test_preflight(moto_aws: None, monkeypatch) -> None:
    aws = preflight_aws.Aws()  # preflight_aws's fixture is named like conftest's `aws`
    monkeypatch.setattr(clients, "make_client", aws.client)
    preflight_aws.account_ready()

    def answers() -> None:
        aws.reservation()
        aws.quota()

    piped, terminal = both(["preflight", str(preflight_aws.EXAMPLE)], answers)
    assert_piped_whole(piped, ["2 x p5.48xlarge in Capacity Block cr-0a1b2c3d4e5f67890: not counted"])
    assert_fits_terminal(terminal, piped)
    aws.ec2_stub.assert_no_pending_responses()
    aws.quota_stub.assert_no_pending_responses()


def test_capacity_find(aws: StubbedAws) -> None:
    def answers() -> None:
        offered = [raw_offering(f"cb-0aaaaaaaaaaaaaaa{day}", "us-east-2a", day, "30000.00") for day in (7, 8)]
        aws.ec2("us-east-2").add_response(
            "describe_capacity_block_offerings", {"CapacityBlockOfferings": offered}, ASK
        )

    piped, terminal = both([*FIND, "--region", "us-east-2"], answers)
    assert_piped_whole(piped, ["cb-0aaaaaaaaaaaaaaa7", "2027-06-07 11:30"])
    assert_fits_terminal(terminal, piped)


def test_capacity_show(aws: StubbedAws) -> None:
    ids = [RESERVATION, "cr-0123456789abcdef0"]

    def answers() -> None:
        found = [raw(RESERVATION, "scheduled")]
        aws.ec2("us-east-2").add_response("describe_capacity_reservations", {"CapacityReservations": found})

    piped, terminal = both(["capacity", "show", *ids, "--region", "us-east-2"], answers)
    assert_piped_whole(piped, [RESERVATION, "starts in 188d 11h"])
    assert_fits_terminal(terminal, piped)


def test_capacity_extend(aws: StubbedAws, config: Path) -> None:
    bought_config(config, aws)
    new_end = datetime(2027, 6, 21, 11, 30, tzinfo=UTC)
    offered = {
        "CapacityBlockExtensionOfferingId": "cbe-0123456789abcdef0",
        "CapacityBlockExtensionDurationHours": 168,
        "CapacityBlockExtensionEndDate": new_end,
        "UpfrontFee": "60000.00",
        "CurrencyCode": "USD",
    }

    def answers() -> None:
        ec2 = aws.ec2()
        ec2.add_response(
            "describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": [offered]}
        )
        ec2.add_response(
            "purchase_capacity_block_extension",
            {
                "CapacityBlockExtensions": [
                    {"CapacityReservationId": RESERVATION, "CapacityBlockExtensionEndDate": new_end}
                ]
            },
        )

    piped, terminal = both(["capacity", "extend", "--config", str(config), "--days", "7", "--yes"], answers)
    # Narrower than 80 columns: the same table either way.
    assert_piped_whole(piped, ["cbe-0123456789abcdef0", "60,000.00"], wide=False)
    assert_fits_terminal(terminal, piped)

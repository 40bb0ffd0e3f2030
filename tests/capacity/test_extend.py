"""`capacity extend`: the extension offerings, paginated, the charge asked for, the config's
end moved; nothing bought or changed when none is offered or the purchase fails."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.aws.buying import RESERVATION, bought_config, config, run
from tests.aws.stubs import StubbedAws

__all__ = ["config"]  # the fixture


def test_extend_buys_the_extension_and_moves_the_end(aws: StubbedAws, config: Path) -> None:
    bought_config(config, aws)
    before = config.read_text()
    new_end = datetime(2027, 6, 21, 11, 30, tzinfo=UTC)
    aws.ec2().add_response(
        "describe_capacity_block_extension_offerings",
        {
            "CapacityBlockExtensionOfferings": [
                {
                    "CapacityBlockExtensionOfferingId": "cbe-0123456789abcdef0",
                    "CapacityBlockExtensionDurationHours": 168,
                    "CapacityBlockExtensionEndDate": new_end,
                    "UpfrontFee": "60000.00",
                    "CurrencyCode": "USD",
                }
            ]
        },
        {"CapacityReservationId": RESERVATION, "CapacityBlockExtensionDurationHours": 168},
    )
    aws.ec2().add_response(
        "purchase_capacity_block_extension",
        {
            "CapacityBlockExtensions": [
                {"CapacityReservationId": RESERVATION, "CapacityBlockExtensionEndDate": new_end}
            ]
        },
        {"CapacityBlockExtensionOfferingId": "cbe-0123456789abcdef0", "CapacityReservationId": RESERVATION},
    )
    result = run("capacity", "extend", "--config", str(config), "--days", "7", "--yes")
    assert result.exit_code == 0, result.output
    after = config.read_text()
    assert set(before.splitlines()) - set(after.splitlines()) == {"      end: 2027-06-14T11:30:00Z"}
    assert set(after.splitlines()) - set(before.splitlines()) == {"      end: 2027-06-21T11:30:00Z"}


def extension(offering_id: str, fee: str) -> dict:
    return {
        "CapacityBlockExtensionOfferingId": offering_id,
        "CapacityBlockExtensionDurationHours": 168,
        "CapacityBlockExtensionEndDate": datetime(2027, 6, 21, 11, 30, tzinfo=UTC),
        "UpfrontFee": fee,
        "CurrencyCode": "USD",
    }


def test_extend_reads_every_page_and_a_failed_purchase_changes_nothing(aws: StubbedAws, config: Path) -> None:
    bought_config(config, aws)
    before = config.read_text()
    ask = {"CapacityReservationId": RESERVATION, "CapacityBlockExtensionDurationHours": 168}
    for _ in range(2):
        aws.ec2().add_response(
            "describe_capacity_block_extension_offerings",
            {
                "CapacityBlockExtensionOfferings": [extension("cbe-0aaaaaaaaaaaaaaa1", "61000.00")],
                "NextToken": "p",
            },
            ask,
        )
        aws.ec2().add_response(
            "describe_capacity_block_extension_offerings",
            {"CapacityBlockExtensionOfferings": [extension("cbe-0bbbbbbbbbbbbbbb2", "60000.00")]},
            {**ask, "NextToken": "p"},
        )
    result = run("capacity", "extend", "--config", str(config), "--days", "7", "--yes")
    assert result.exit_code == 2, result.output
    assert "--offering: several extensions are offered" in result.stderr
    # Cheapest first: the second page's offering leads the table.
    lines = [line for line in result.stdout.splitlines() if "cbe-0" in line]
    assert "cbe-0bbbbbbbbbbbbbbb2" in lines[0] and "cbe-0aaaaaaaaaaaaaaa1" in lines[1]
    aws.ec2().add_client_error("purchase_capacity_block_extension", "InsufficientInstanceCapacity", "gone")
    result = run(
        "capacity", "extend", "--config", str(config), "--days", "7", "--offering", "cbe-0bbbbbbbbbbbbbbb2",
        input="y\n",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "Buy?" in result.output and "PurchaseCapacityBlockExtension" in result.stderr
    assert config.read_text() == before


def test_extend_with_no_offering_buys_nothing(aws: StubbedAws, config: Path) -> None:
    bought_config(config, aws)
    before = config.read_text()
    aws.ec2().add_response(
        "describe_capacity_block_extension_offerings", {"CapacityBlockExtensionOfferings": []}
    )
    result = run("capacity", "extend", "--config", str(config), "--days", "7", "--yes")
    assert result.exit_code == 1
    assert "no extension of 7 days" in result.stdout
    assert config.read_text() == before


def test_extend_needs_a_block_group(aws: StubbedAws, config: Path) -> None:
    result = run("capacity", "extend", "--config", str(config), "--days", "7")
    assert result.exit_code == 2
    assert "has no Capacity Block group" in result.stderr

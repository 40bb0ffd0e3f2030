"""`capacity buy`: the charge is shown and confirmed, the config keeps every line it did
not mean to change, a failed purchase leaves it unchanged, and an offering `capacity find`
did not show here is looked up again."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpucluster.config.loader import load_config
from tests.aws.buying import (
    END,
    OFFERING,
    RESERVATION,
    START,
    bought_config,
    config,
    purchase_ok,
    remember,
    run,
)
from tests.aws.config_text import COMMENTED_CONFIG
from tests.aws.stubs import StubbedAws

__all__ = ["config"]  # the fixture


def test_buy_shows_the_charge_asks_and_writes_the_block(aws: StubbedAws, config: Path) -> None:
    remember()
    purchase_ok(aws)
    result = run("capacity", "buy", OFFERING, "--config", str(config), input="y\n")
    assert result.exit_code == 0, result.output
    assert "64,512.00 USD (24.0000 per GPU-hour)" in result.stdout
    assert "Buy?" in result.output
    after = config.read_text()
    removed = set(COMMENTED_CONFIG.splitlines()) - set(after.splitlines())
    added = set(after.splitlines()) - set(COMMENTED_CONFIG.splitlines())
    assert removed == {
        "    capacity: {type: on-demand}   # bought in the console for now",
        "availability_zone: us-east-2a",
    }
    assert added == {
        "    capacity:                     # bought in the console for now",
        "      type: capacity-block",
        f"      reservation_id: {RESERVATION}",
        "      start: 2027-06-07T11:30:00Z",
        "      end: 2027-06-14T11:30:00Z",
        "availability_zone: us-east-2b",
    }
    cfg = load_config(config)
    assert cfg.availability_zone == "us-east-2b"
    assert cfg.compute_groups[0].capacity.reservation_id == RESERVATION  # type: ignore[union-attr]


def test_a_purchase_that_fails_after_confirmation_leaves_the_file_unchanged(
    aws: StubbedAws, config: Path
) -> None:
    remember()
    aws.ec2().add_client_error("purchase_capacity_block", "InsufficientInstanceCapacity", "sold out")
    result = run("capacity", "buy", OFFERING, "--config", str(config), "--yes")
    assert result.exit_code == 1
    assert "error aws ec2:PurchaseCapacityBlock (us-east-2): InsufficientInstanceCapacity: sold out;" in (
        result.stderr
    )
    assert config.read_text() == COMMENTED_CONFIG
    assert [p.name for p in config.parent.iterdir()] == ["cluster.yaml"]


def test_saying_no_buys_nothing(aws: StubbedAws, config: Path) -> None:
    remember()
    result = run("capacity", "buy", OFFERING, "--config", str(config), input="n\n")
    assert result.exit_code == 1
    assert "aborted" in result.stderr
    assert config.read_text() == COMMENTED_CONFIG
    assert aws.made == []


@pytest.mark.parametrize(
    ("offer", "extra", "message"),
    [
        (
            {"region": "us-west-2", "az": "us-west-2a"},
            [],
            "region: is us-east-2, the offering is in us-west-2",
        ),
        ({"count": 1}, [], "compute_groups.0.count: 2 nodes, the block holds 1"),
        ({}, ["--group", "dev"], "group dev runs g6e.48xlarge, the block holds p5.48xlarge"),
        ({}, ["--group", "nope"], "error gpucluster capacity buy: --group: "),
    ],
)
def test_a_block_the_config_cannot_take_is_refused_before_buying(
    aws: StubbedAws, config: Path, offer: dict, extra: list[str], message: str
) -> None:
    remember(**offer)
    result = run("capacity", "buy", OFFERING, "--config", str(config), "--yes", *extra)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert config.read_text() == COMMENTED_CONFIG
    assert aws.made == []


def test_a_block_in_another_az_than_an_existing_subnet_is_refused(aws: StubbedAws, config: Path) -> None:
    text = COMMENTED_CONFIG.replace(
        "image:\n",
        "network:\n  vpc_id: vpc-0123456789abcdef0\n  subnet_id: subnet-0123456789abcdef0\nimage:\n",
    )
    config.write_text(text)
    remember()
    result = run("capacity", "buy", OFFERING, "--config", str(config), "--yes")
    assert result.exit_code == 2, result.output
    assert (
        "network.subnet_id: subnet-0123456789abcdef0 lies in us-east-2a, the offering in us-east-2b"
        in result.stderr
    )
    assert config.read_text() == text
    assert aws.made == []


def raw_offering(offering_id: str, az: str = "us-east-2b") -> dict:
    return {
        "CapacityBlockOfferingId": offering_id,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": az,
        "InstanceCount": 2,
        "StartDate": START,
        "EndDate": END,
        "CapacityBlockDurationHours": 168,
        "UpfrontFee": "64512.00",
        "CurrencyCode": "USD",
    }


# The config's train group: 2 x p5.48xlarge; --days 7 gives the length.
ASK = {"InstanceType": "p5.48xlarge", "InstanceCount": 2, "CapacityDurationHours": 168}


def test_an_offering_found_in_the_console_is_looked_up_and_bought(aws: StubbedAws, config: Path) -> None:
    # No `capacity find` here: the id is found again, on the second page of the answer.
    aws.ec2().add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": [raw_offering("cb-0aaaaaaaaaaaaaaa1")], "NextToken": "t1"},
        ASK,
    )
    aws.ec2().add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": [raw_offering(OFFERING)]},
        {**ASK, "NextToken": "t1"},
    )
    purchase_ok(aws)
    result = run(
        "capacity", "buy", OFFERING, "--config", str(config), "--group", "train", "--days", "7", input="y\n"
    )
    assert result.exit_code == 0, result.output
    assert "64,512.00 USD (24.0000 per GPU-hour)" in result.stdout and "Buy?" in result.output
    capacity = load_config(config).compute_groups[0].capacity
    assert capacity.reservation_id == RESERVATION  # type: ignore[union-attr]


def test_options_name_an_offering_of_another_size_and_dates(aws: StubbedAws, config: Path) -> None:
    ask = {
        "InstanceType": "p5.48xlarge",
        "InstanceCount": 4,
        "CapacityDurationHours": 24 * 14,
        "StartDateRange": datetime(2027, 6, 1, tzinfo=UTC),
    }
    aws.ec2().add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []}, ask)
    result = run(
        "capacity", "buy", OFFERING, "--config", str(config), "--yes",
        "--instance-type", "p5.48xlarge", "--count", "4", "--days", "14", "--start-after", "2027-06-01",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    flat = " ".join(result.stderr.split())
    assert f"OFFERING_ID: {OFFERING} is not offered now for 4 x p5.48xlarge for 14 days in us-east-2" in flat
    assert "(offered: none)" in flat and "gpucluster capacity find" in flat
    assert config.read_text() == COMMENTED_CONFIG


def test_an_id_no_longer_offered_is_refused_before_buying(aws: StubbedAws, config: Path) -> None:
    aws.ec2().add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": [raw_offering("cb-0aaaaaaaaaaaaaaa1")]},
        ASK,
    )
    result = run(
        "capacity", "buy", OFFERING, "--config", str(config), "--yes", "--group", "train", "--days", "7"
    )
    assert result.exit_code == 2, result.output
    assert "(offered: cb-0aaaaaaaaaaaaaaa1)" in " ".join(result.stderr.split())
    assert config.read_text() == COMMENTED_CONFIG  # and no purchase was queued: the stub checks


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "several compute groups"),
        (["--group", "train"], "--days: the offering's length is not known"),
        # The option at fault is --group, not --instance-type.
        (["--group", "nope"], "error gpucluster capacity buy: --group: "),
        (["--instance-type", "p4d.24xlarge", "--days", "7"], "--count: the offering's instance count"),
    ],
)
def test_without_find_the_offering_must_be_described(
    aws: StubbedAws, config: Path, extra: list[str], message: str
) -> None:
    result = run("capacity", "buy", OFFERING, "--config", str(config), "--yes", *extra)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.stderr.split())
    if "nope" in extra:
        assert f"{config} has no compute group 'nope'; pass one of: train, dev" in result.stderr
    assert "Traceback" not in result.output
    assert aws.made == []


def test_the_next_block_of_a_block_group_has_its_length(aws: StubbedAws, config: Path) -> None:
    bought_config(config, aws)
    other = "cb-0ccccccccccccccc1"
    aws.ec2().add_response(
        "describe_capacity_block_offerings", {"CapacityBlockOfferings": [raw_offering(other)]}, ASK
    )
    aws.ec2().add_client_error("purchase_capacity_block", "InsufficientInstanceCapacity", "sold out")
    before = config.read_text()
    result = run("capacity", "buy", other, "--config", str(config), "--yes", "--group", "train")
    assert result.exit_code == 1, result.output
    assert "InsufficientInstanceCapacity" in result.stderr
    assert config.read_text() == before


def test_a_write_that_fails_after_paying_prints_the_reservation(
    aws: StubbedAws, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpucluster.config import edit

    remember()
    purchase_ok(aws)

    def full(path: Path, text: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(edit, "write_atomically", full)
    result = run("capacity", "buy", OFFERING, "--config", str(config), "--yes")
    assert result.exit_code == 2
    assert f"bought {RESERVATION} (us-east-2b, 2027-06-07T11:30Z to 2027-06-14T11:30Z)" in result.stdout
    assert "cannot be written (No space left on device)" in result.stderr
    assert config.read_text() == COMMENTED_CONFIG

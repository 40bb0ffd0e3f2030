"""`capacity buy` and `capacity extend`: check everything, ask, pay, write the config.

The order matters because a block is paid up front: the config edit is checked
(with a stand-in reservation id) before the purchase, so a config that could not
take the block fails before any money is spent; a purchase that fails leaves the
file untouched; after a purchase the write is the only step left.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import aws_call
from gpucluster.bad_input import BadInput
from gpucluster.capacity.offerings import Offering
from gpucluster.config import CapacityBlockCapacity, ClusterConfig, OdcrCapacity
from gpucluster.config.edit import Edit, UtcTime, apply_edits, edit_config
from gpucluster.group_option import group_index

# The DLAMI is Ubuntu: blocks for it are bought for the Linux/UNIX platform, and
# instances must launch with the block's platform (FACTS.md, Hard limits).
PLATFORM = "Linux/UNIX"
# A syntactically valid id for checking the edit before a real one exists.
STAND_IN_RESERVATION = "cr-00000000000000000"


@dataclass(frozen=True)
class Bought:
    reservation_id: str
    availability_zone: str
    start: datetime
    end: datetime


def pick_group(cfg: ClusterConfig, source: Path, instance_type: str, group: str | None) -> int:
    """Index of the compute group that takes the block: --group, or the only one of that type."""
    if group is not None:
        index = group_index(cfg, source, group)
        candidate = cfg.compute_groups[index]
        if candidate.instance_type != instance_type:
            raise BadInput(
                source,
                f"compute_groups.{index}.instance_type",
                f"group {group} runs {candidate.instance_type}, the block holds {instance_type}",
                "pick the group of that type with --group, or find blocks of its type",
            )
        return index
    matching = [i for i, g in enumerate(cfg.compute_groups) if g.instance_type == instance_type]
    if len(matching) == 1:
        return matching[0]
    what = "no compute group runs" if not matching else "several compute groups run"
    raise BadInput(source, "compute_groups", f"{what} {instance_type}", "name the group with --group NAME")


def block_edits(cfg: ClusterConfig, index: int, bought: Bought) -> list[Edit]:
    capacity = ("compute_groups", index, "capacity")
    edits = [
        Edit((*capacity, "type"), "capacity-block"),
        Edit((*capacity, "reservation_id"), bought.reservation_id),
        Edit((*capacity, "start"), UtcTime.of(bought.start)),
        Edit((*capacity, "end"), UtcTime.of(bought.end)),
    ]
    if cfg.availability_zone != bought.availability_zone:
        edits.append(Edit(("availability_zone",), bought.availability_zone))
    return edits


def check_purchase(cfg: ClusterConfig, source: Path, offering: Offering, index: int) -> None:
    """BadInput for every reason the block could not go into this config; nothing is bought yet."""
    from gpucluster.config.loader import parse_config

    group = cfg.compute_groups[index]
    if offering.region != cfg.region:
        raise BadInput(
            source,
            "region",
            f"is {cfg.region}, the offering is in {offering.region}",
            "buy an offering of the config's region (capacity find --region)",
        )
    if group.count > offering.instance_count:
        raise BadInput(
            source,
            f"compute_groups.{index}.count",
            f"{group.count} nodes, the block holds {offering.instance_count}",
            "lower count or find a larger block",
        )
    others = [
        g.name
        for i, g in enumerate(cfg.compute_groups)
        if i != index and isinstance(g.capacity, CapacityBlockCapacity | OdcrCapacity)
    ]
    if offering.availability_zone != cfg.availability_zone and others:
        raise BadInput(
            source,
            "availability_zone",
            f"is {cfg.availability_zone}, where group(s) {', '.join(others)} hold reservations; "
            f"the offering is in {offering.availability_zone} and a cluster lives in one AZ",
            f"pick an offering in {cfg.availability_zone}",
        )
    if offering.availability_zone != cfg.availability_zone and cfg.network.subnet_id is not None:
        raise BadInput(
            source,
            "network.subnet_id",
            f"{cfg.network.subnet_id} lies in {cfg.availability_zone}, "
            f"the offering in {offering.availability_zone}",
            f"pick an offering in {cfg.availability_zone}, or a subnet of {offering.availability_zone} first",
        )
    stand_in = Bought(STAND_IN_RESERVATION, offering.availability_zone, offering.start, offering.end)
    parse_config(
        apply_edits(source.read_text(encoding="utf-8"), block_edits(cfg, index, stand_in), source),
        str(source),
    )


def charge_lines(offering: Offering) -> list[str]:
    return [
        f"offering     {offering.offering_id} in {offering.availability_zone}",
        f"instances    {offering.instance_count} x {offering.instance_type}, {offering.hours} hours",
        f"window UTC   {offering.start:%Y-%m-%d %H:%M} to {offering.end:%Y-%m-%d %H:%M}",
        f"charged now  {offering.upfront_fee:,.2f} {offering.currency} "
        f"({offering.price_per_gpu_hour} per GPU-hour), not refundable",
    ]


def buy(clients: Clients, offering: Offering) -> Bought:
    ec2 = clients.get("ec2", offering.region)
    with aws_call("ec2:PurchaseCapacityBlock", offering.region):
        answer = ec2.purchase_capacity_block(
            CapacityBlockOfferingId=offering.offering_id, InstancePlatform=PLATFORM
        )
    reservation: dict[str, Any] = answer["CapacityReservation"]
    return Bought(
        reservation["CapacityReservationId"],
        reservation.get("AvailabilityZone", offering.availability_zone),
        reservation.get("StartDate", offering.start),
        reservation.get("EndDate", offering.end),
    )


def write_block(source: Path, index: int, cfg: ClusterConfig, bought: Bought) -> ClusterConfig:
    return edit_config(source, block_edits(cfg, index, bought))


@dataclass(frozen=True)
class Extension:
    offering_id: str
    reservation_id: str
    hours: int
    new_end: datetime
    upfront_fee: Decimal
    currency: str


EXTENSION_COLUMNS = ("extension offering", "hours", "new end UTC", "upfront fee", "currency")


def extension_offerings(clients: Clients, region: str, reservation_id: str, days: int) -> list[Extension]:
    paginator = clients.get("ec2", region).get_paginator("describe_capacity_block_extension_offerings")
    found: list[Extension] = []
    with aws_call("ec2:DescribeCapacityBlockExtensionOfferings", region):
        pages = paginator.paginate(
            CapacityReservationId=reservation_id, CapacityBlockExtensionDurationHours=days * 24
        )
        for page in pages:
            found.extend(
                Extension(
                    raw["CapacityBlockExtensionOfferingId"],
                    reservation_id,
                    int(raw["CapacityBlockExtensionDurationHours"]),
                    raw["CapacityBlockExtensionEndDate"],
                    Decimal(str(raw["UpfrontFee"])),
                    raw["CurrencyCode"],
                )
                for raw in page.get("CapacityBlockExtensionOfferings", [])
            )
    return sorted(found, key=lambda e: (e.upfront_fee, e.new_end))


def check_extension(source: Path, index: int, extension: Extension) -> None:
    """The config with the new end must be valid before the extension is bought."""
    from gpucluster.config.loader import parse_config

    edit = [Edit(("compute_groups", index, "capacity", "end"), UtcTime.of(extension.new_end))]
    parse_config(apply_edits(source.read_text(encoding="utf-8"), edit, source), str(source))


def buy_extension(clients: Clients, region: str, extension: Extension) -> datetime:
    ec2 = clients.get("ec2", region)
    with aws_call("ec2:PurchaseCapacityBlockExtension", region):
        answer = ec2.purchase_capacity_block_extension(
            CapacityBlockExtensionOfferingId=extension.offering_id,
            CapacityReservationId=extension.reservation_id,
        )
    ends = [raw["CapacityBlockExtensionEndDate"] for raw in answer.get("CapacityBlockExtensions", [])]
    return max(ends, default=extension.new_end)


def write_end(source: Path, index: int, end: datetime) -> ClusterConfig:
    return edit_config(source, [Edit(("compute_groups", index, "capacity", "end"), UtcTime.of(end))])

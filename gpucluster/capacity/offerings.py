"""`capacity find`: the Capacity Block offerings of several regions, cheapest soonest first.

EC2 sells blocks of 1-64 instances (CAPACITY_BLOCK_SIZES) lasting 1-14 days or 21-182
days in 7-day steps (capacity_block_rules); a request outside them is refused before
any call. Each search is remembered on disk, so `capacity buy OFFERING_ID` can show
what the offering costs and where it is without another call: PurchaseCapacityBlock
takes only the id, and no call describes one offering by id (an id not remembered
here is looked up again: gpucluster.capacity.lookup).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import AwsError, aws_call
from gpucluster.bad_input import BadInput
from gpucluster.catalog import load_catalog
from gpucluster.config.capacity import CAPACITY_BLOCK_SIZES
from gpucluster.config.capacity_block_rules import MAX_DAYS, valid_days

CACHE_ENV = "GPUCLUSTER_CACHE_DIR"
CACHE_FILE = "capacity-offerings.json"
CALL = "ec2:DescribeCapacityBlockOfferings"


@dataclass(frozen=True)
class Offering:
    offering_id: str
    region: str
    availability_zone: str
    instance_type: str
    instance_count: int
    start: datetime
    end: datetime
    hours: int
    upfront_fee: Decimal
    currency: str

    @property
    def gpu_hours(self) -> int:
        return load_catalog().get(self.instance_type).gpu_count * self.instance_count * self.hours

    @property
    def price_per_gpu_hour(self) -> Decimal:
        return (self.upfront_fee / self.gpu_hours).quantize(Decimal("0.0001"))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(start=self.start.isoformat(), end=self.end.isoformat(), upfront_fee=str(self.upfront_fee))
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Offering:
        return cls(
            **{
                **data,
                "start": datetime.fromisoformat(data["start"]),
                "end": datetime.fromisoformat(data["end"]),
                "upfront_fee": Decimal(data["upfront_fee"]),
            }
        )


@dataclass(frozen=True)
class Request:
    instance_type: str
    count: int
    days: int
    start_after: datetime | None = None
    end_before: datetime | None = None


def check_request(request: Request) -> None:
    """BadInput for what EC2 would refuse, before any call costs time."""
    source = "(command line)"
    catalog = load_catalog()
    if request.instance_type not in catalog:
        raise BadInput(
            source,
            "--instance-type",
            f"{request.instance_type} is not in the GPU catalog",
            f"use one of: {', '.join(catalog.names())}",
        )
    if not catalog.get(request.instance_type).capacity_block_supported:
        raise BadInput(
            source,
            "--instance-type",
            f"Capacity Blocks are not sold for {request.instance_type}",
            "pick one of: "
            + ", ".join(n for n in catalog.names() if catalog.get(n).capacity_block_supported),
        )
    if request.count not in CAPACITY_BLOCK_SIZES:
        raise BadInput(
            source,
            "--count",
            f"{request.count} instances is not a Capacity Block size",
            f"use one of {', '.join(map(str, CAPACITY_BLOCK_SIZES))}",
        )
    if not valid_days(request.days):
        raise BadInput(
            source,
            "--days",
            f"{request.days} days is not a length EC2 sells",
            f"use 1-14, or 21-{MAX_DAYS} in steps of 7",
        )
    if request.start_after and request.end_before and request.start_after >= request.end_before:
        raise BadInput(source, "--start-after", "is not before --end-before", "widen the date range")


def _offering(region: str, raw: dict[str, Any]) -> Offering:
    return Offering(
        offering_id=raw["CapacityBlockOfferingId"],
        region=region,
        availability_zone=raw["AvailabilityZone"],
        instance_type=raw["InstanceType"],
        instance_count=int(raw["InstanceCount"]),
        start=raw["StartDate"],
        end=raw["EndDate"],
        hours=int(raw["CapacityBlockDurationHours"]),
        upfront_fee=Decimal(str(raw["UpfrontFee"])),
        currency=raw["CurrencyCode"],
    )


def find_offerings(
    clients: Clients, regions: Sequence[str], request: Request
) -> tuple[list[Offering], list[AwsError]]:
    """Every offering of every region, sorted by start, then price, and the failure of each
    region that could not be searched: one region down does not hide the others' offerings.
    A login problem fails every region the same way, so it is raised at once."""
    check_request(request)
    arguments: dict[str, Any] = {
        "InstanceType": request.instance_type,
        "InstanceCount": request.count,
        "CapacityDurationHours": request.days * 24,
    }
    if request.start_after:
        arguments["StartDateRange"] = request.start_after
    if request.end_before:
        arguments["EndDateRange"] = request.end_before
    found: list[Offering] = []
    failed: list[AwsError] = []
    for region in regions:
        try:
            paginator = clients.get("ec2", region).get_paginator("describe_capacity_block_offerings")
            with aws_call(CALL, region):
                for page in paginator.paginate(**arguments):
                    found.extend(_offering(region, raw) for raw in page.get("CapacityBlockOfferings", []))
        except AwsError as exc:
            if exc.kind == "login":
                raise
            failed.append(exc)
    return sorted(found, key=lambda o: (o.start, o.upfront_fee, o.region, o.availability_zone)), failed


def rows(offerings: Iterable[Offering]) -> list[tuple[str, ...]]:
    return [
        (
            o.offering_id,
            o.availability_zone,
            f"{o.start:%Y-%m-%d %H:%M}",
            f"{o.end:%Y-%m-%d %H:%M}",
            str(o.hours),
            f"{o.upfront_fee:,.2f}",
            o.currency,
            f"{o.price_per_gpu_hour:.4f}",
        )
        for o in offerings
    ]


COLUMNS = ("offering", "AZ", "start UTC", "end UTC", "hours", "upfront fee", "currency", "per GPU-hour")


def cache_path() -> Path:
    base = os.environ.get(CACHE_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "gpucluster"
    )
    return Path(base) / CACHE_FILE


def remember(offerings: Iterable[Offering]) -> None:
    """Add `offerings` to the cache that `capacity buy` reads; a cache that cannot be written is skipped."""
    path = cache_path()
    known = _cached(path)
    known.update({o.offering_id: o.to_json() for o in offerings})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known, indent=1, sort_keys=True))
    except OSError:
        pass  # buy then looks the offering up again; nothing is lost


def _cached(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def recall(offering_id: str) -> Offering | None:
    """The offering `capacity find` showed here, or None (gpucluster.capacity.lookup finds it then)."""
    raw = _cached(cache_path()).get(offering_id)
    if raw is None:
        return None
    try:
        return Offering.from_json(raw)
    except (KeyError, TypeError, ValueError):
        raise BadInput(
            cache_path(), offering_id, "is unreadable", "delete the file and run `gpucluster capacity find`"
        ) from None

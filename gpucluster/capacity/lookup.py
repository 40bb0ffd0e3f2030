"""The offering `capacity buy OFFERING_ID` is about, with or without a prior `capacity find`.

PurchaseCapacityBlock takes only the id, but the charge must be shown before it, and no
call describes one offering by id. An id `capacity find` showed here is read from its
cache. Any other id (one found in the console, or on another machine) is looked up
again: DescribeCapacityBlockOfferings with the instance type, count and length the
offering was found with, from the command line or the config's group, and the id must
be among the answers. Offerings change by the minute, so an id no longer offered is
refused before anything is bought.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from gpucluster.aws.clients import Clients
from gpucluster.bad_input import COMMAND_LINE, BadInput
from gpucluster.capacity import offerings
from gpucluster.config import CapacityBlockCapacity, ClusterConfig
from gpucluster.config.capacity import CAPACITY_BLOCK_SIZES
from gpucluster.group_option import group_index


@dataclass(frozen=True)
class Search:
    """What the offering was found with; None: take it from the config's group."""

    instance_type: str | None = None
    count: int | None = None
    days: int | None = None
    start_after: datetime | None = None
    end_before: datetime | None = None


def request_for(cfg: ClusterConfig, source: Path, group: str | None, search: Search) -> offerings.Request:
    """The search that should find the offering again: the options, else the group's values."""
    groups = (
        list(cfg.compute_groups) if group is None else [cfg.compute_groups[group_index(cfg, source, group)]]
    )
    if search.instance_type is not None:
        groups = [g for g in groups if g.instance_type == search.instance_type]
    chosen = groups[0] if len(groups) == 1 else None
    instance_type = search.instance_type or (chosen.instance_type if chosen else None)
    if instance_type is None:
        raise BadInput(
            COMMAND_LINE,
            "--instance-type",
            f"the offering was not found by `capacity find` here and {source} has several compute groups",
            "pass --group NAME, or --instance-type, --count and --days as the offering shows them",
        )
    count = search.count
    if count is None and chosen is not None and chosen.count in CAPACITY_BLOCK_SIZES:
        count = chosen.count
    if count is None:
        raise BadInput(
            COMMAND_LINE,
            "--count",
            "the offering's instance count is not known",
            "pass --count N as the offering shows it (1, 2, 4, 8, 16, 32 or 64)",
        )
    days = search.days
    if days is None and chosen is not None and isinstance(chosen.capacity, CapacityBlockCapacity):
        # Buying the next block for a group: the same length as its current one.
        days = round((chosen.capacity.end - chosen.capacity.start).total_seconds() / 86400)
    if days is None:
        raise BadInput(
            COMMAND_LINE,
            "--days",
            "the offering's length is not known",
            "pass --days D as the offering shows it (its hours / 24)",
        )
    return offerings.Request(instance_type, count, days, search.start_after, search.end_before)


def locate(clients: Clients, region: str, request: offerings.Request, offering_id: str) -> offerings.Offering:
    """The offering `offering_id` among what EC2 offers now for `request`, or BadInput."""
    found, failed = offerings.find_offerings(clients, [region], request)
    if failed:
        raise failed[0]
    offerings.remember(found)
    for offering in found:
        if offering.offering_id == offering_id:
            return offering
    asked = f"{request.count} x {request.instance_type} for {request.days} days in {region}"
    listed = ", ".join(o.offering_id for o in found) or "none"
    raise BadInput(
        COMMAND_LINE,
        "OFFERING_ID",
        f"{offering_id} is not offered now for {asked} (offered: {listed})",
        "offerings change quickly: run `gpucluster capacity find` with the same values "
        "(and --start-after/--end-before for a later start) and buy an id from its table",
    )


def offering_for_buy(
    cfg: ClusterConfig, source: Path, offering_id: str, group: str | None, search: Search
) -> offerings.Offering:
    """The offering `capacity find` showed here, else the one EC2 offers now under that id."""
    cached = offerings.recall(offering_id)
    if cached is not None:
        return cached
    return locate(Clients(), cfg.region, request_for(cfg, source, group, search), offering_id)

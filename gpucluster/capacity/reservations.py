"""Capacity reservations (blocks and ODCRs) as EC2 reports them, and waiting for one to start."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import AwsError, aws_call
from gpucluster.config import CapacityBlockCapacity, ClusterConfig, OdcrCapacity

CALL = "ec2:DescribeCapacityReservations"
# Capacity Block states (EC2 user guide, "Capacity Blocks", states): a block is bought
# payment-pending, becomes scheduled once paid, active at its start, expired at its end.
WAITING_STATES = frozenset({"payment-pending", "scheduled", "pending", "assessing", "delayed"})
FAILED_STATES = frozenset({"payment-failed", "expired", "cancelled", "failed", "unsupported"})


@dataclass(frozen=True)
class Reservation:
    reservation_id: str
    region: str
    availability_zone: str
    instance_type: str
    platform: str
    count: int
    state: str
    kind: str  # ReservationType: capacity-block or default (an ODCR)
    start: datetime | None
    end: datetime | None

    def time_left(self, now: datetime) -> str:
        if self.end is None:
            return "open-ended"
        if self.start is not None and now < self.start:
            return f"starts in {_span(self.start - now)}"
        return f"{_span(self.end - now)} left" if self.end > now else "ended"


def _span(delta: timedelta) -> str:
    hours = int(delta.total_seconds() // 3600)
    return (
        f"{hours // 24}d {hours % 24}h"
        if hours >= 24
        else f"{hours}h {int(delta.total_seconds() // 60) % 60}m"
    )


def _reservation(region: str, raw: dict[str, Any]) -> Reservation:
    return Reservation(
        reservation_id=raw["CapacityReservationId"],
        region=region,
        availability_zone=raw.get("AvailabilityZone", ""),
        instance_type=raw.get("InstanceType", ""),
        platform=raw.get("InstancePlatform", ""),
        count=int(raw.get("TotalInstanceCount", 0)),
        state=raw.get("State", "unknown"),
        kind=raw.get("ReservationType", "default"),
        start=raw.get("StartDate"),
        end=raw.get("EndDate"),
    )


def describe(clients: Clients, region: str, ids: Sequence[str]) -> list[Reservation]:
    """The reservations `ids` (all of the account's in `region` when empty), in the order asked."""
    paginator = clients.get("ec2", region).get_paginator("describe_capacity_reservations")
    arguments: dict[str, Any] = {"CapacityReservationIds": list(ids)} if ids else {}
    found: list[Reservation] = []
    with aws_call(CALL, region):
        for page in paginator.paginate(**arguments):
            found.extend(_reservation(region, raw) for raw in page.get("CapacityReservations", []))
    order = {rid: index for index, rid in enumerate(ids)}
    return sorted(found, key=lambda r: order.get(r.reservation_id, len(order)))


def config_reservations(cfg: ClusterConfig) -> dict[str, str]:
    """Reservation id -> compute group name, for every group that names one."""
    return {
        group.capacity.reservation_id: group.name
        for group in cfg.compute_groups
        if isinstance(group.capacity, CapacityBlockCapacity | OdcrCapacity)
    }


ROW_COLUMNS = ("reservation", "type", "AZ", "instances", "state", "start UTC", "end UTC", "time left")


def row(reservation: Reservation, now: datetime) -> tuple[str, ...]:
    return (
        reservation.reservation_id,
        reservation.kind,
        reservation.availability_zone,
        f"{reservation.count} x {reservation.instance_type}",
        reservation.state,
        f"{reservation.start:%Y-%m-%d %H:%M}" if reservation.start else "-",
        f"{reservation.end:%Y-%m-%d %H:%M}" if reservation.end else "-",
        reservation.time_left(now),
    )


@dataclass(frozen=True)
class WaitResult:
    reservations: list[Reservation]
    done: bool  # every one active
    failed: list[Reservation]  # in a state that never becomes active


def _quiet(failure: AwsError, pause: float) -> None:
    """The default of wait_active's `on_retry`: retry without a word."""


def wait_active(
    clients: Clients,
    region: str,
    ids: Sequence[str],
    timeout: timedelta,
    poll: timedelta,
    on_poll: Callable[[list[Reservation]], None],
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] | None = None,
    *,
    on_retry: Callable[[AwsError, float], None] = _quiet,
) -> WaitResult:
    """Poll until every reservation is active, one can never become active, or `timeout` passes.

    A network failure (no answer, a timeout) is retried at the poll interval until the
    timeout, each retry reported through `on_retry` (the failure and the pause before the
    next try); the last one is raised. Any other failure is raised at once. `sleep` and
    `clock` default to time.sleep and time.monotonic, read at the call."""
    sleep = sleep or time.sleep
    clock = clock or time.monotonic
    deadline = clock() + timeout.total_seconds()
    while True:
        try:
            current = describe(clients, region, ids)
        except AwsError as failure:
            left = deadline - clock()
            if failure.kind != "network" or left <= 0:
                raise
            pause = min(poll.total_seconds(), left)
            on_retry(failure, pause)
            sleep(pause)
            continue
        on_poll(current)
        missing = set(ids) - {r.reservation_id for r in current}
        failed = [r for r in current if r.state in FAILED_STATES]
        if failed or missing:
            return WaitResult(current, False, failed)
        if all(r.state == "active" for r in current):
            return WaitResult(current, True, [])
        left = deadline - clock()
        if left <= 0:
            return WaitResult(current, False, [])
        sleep(min(poll.total_seconds(), left))

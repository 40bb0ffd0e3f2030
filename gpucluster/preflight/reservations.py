"""Each group's Capacity Block or ODCR against the config: where, what, how many, when."""

from __future__ import annotations

from gpucluster.aws.clients import Clients
from gpucluster.capacity.purchase import PLATFORM
from gpucluster.capacity.reservations import FAILED_STATES, Reservation, describe
from gpucluster.config import CapacityBlockCapacity, ClusterConfig, ComputeGroupConfig, OdcrCapacity
from gpucluster.preflight.result import Result, failed, passed


def reservations(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    groups = [g for g in cfg.compute_groups if isinstance(g.capacity, CapacityBlockCapacity | OdcrCapacity)]
    if not groups:
        return []
    ids = [g.capacity.reservation_id for g in groups]  # type: ignore[union-attr]
    found = {r.reservation_id: r for r in describe(clients, cfg.region, ids)}
    index = {group.name: i for i, group in enumerate(cfg.compute_groups)}
    return [
        _check(cfg, group, index[group.name], found.get(group.capacity.reservation_id))  # type: ignore[union-attr]
        for group in groups
    ]


def _check(cfg: ClusterConfig, group: ComputeGroupConfig, index: int, found: Reservation | None) -> Result:
    capacity = group.capacity
    assert isinstance(capacity, CapacityBlockCapacity | OdcrCapacity)  # reservations() picked these
    check = f"reservation {group.name}"
    rid = capacity.reservation_id
    if found is None:
        return failed(
            check, f"{rid} does not exist in {cfg.region}", "copy the id from `gpucluster capacity show`"
        )
    where = f"compute_groups.{index}"
    problems: list[tuple[str, str]] = []
    is_block = isinstance(capacity, CapacityBlockCapacity)
    if (found.kind == "capacity-block") != is_block:
        problems.append((f"{rid} is a {found.kind} reservation", f"set {where}.capacity.type to match it"))
    if found.availability_zone != cfg.availability_zone:
        problems.append(
            (f"{rid} is in {found.availability_zone}", f"set availability_zone: {found.availability_zone}")
        )
    if found.instance_type != group.instance_type:
        problems.append(
            (f"{rid} holds {found.instance_type}", f"set {where}.instance_type: {found.instance_type}")
        )
    if found.platform != PLATFORM:
        problems.append(
            (f"{rid} is for {found.platform}", f"use a {PLATFORM} reservation (the DLAMI is Ubuntu)")
        )
    if found.count < group.count:
        problems.append(
            (
                f"{rid} holds {found.count} instances, the group runs {group.count}",
                f"set {where}.count: {found.count}",
            )
        )
    if found.state in FAILED_STATES:
        problems.append((f"{rid} is {found.state}", "buy a new block (`gpucluster capacity find`)"))
    elif not is_block and found.state != "active":
        problems.append((f"{rid} is {found.state}", "use an active reservation"))
    if isinstance(capacity, CapacityBlockCapacity) and (found.start, found.end) != (
        capacity.start,
        capacity.end,
    ):
        problems.append(
            (
                f"{rid} runs {_when(found)}, the config says {capacity.start:%Y-%m-%dT%H:%MZ} to "
                f"{capacity.end:%Y-%m-%dT%H:%MZ}",
                f"copy its start and end into {where}.capacity (extended?)",
            )
        )
    if problems:
        return failed(check, "; ".join(what for what, _ in problems), "; ".join(fix for _, fix in problems))
    return passed(
        check, f"{rid}: {found.count} x {found.instance_type} in {found.availability_zone}, {found.state}"
    )


def _when(found: Reservation) -> str:
    start = f"{found.start:%Y-%m-%dT%H:%MZ}" if found.start else "?"
    end = f"{found.end:%Y-%m-%dT%H:%MZ}" if found.end else "open-ended"
    return f"{start} to {end}"

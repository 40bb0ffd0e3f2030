"""The `capacity` verbs' steps, so gpucluster.cli keeps one thin function per verb."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import AwsError
from gpucluster.bad_input import BadInput
from gpucluster.capacity import lookup, offerings, purchase, reservations
from gpucluster.config import CapacityBlockCapacity, ClusterConfig
from gpucluster.config.capacity_block_rules import current_time
from gpucluster.env_problem import report_problem
from gpucluster.group_option import group_index
from gpucluster.tables import print_table, table


def parse_time(value: str | None, option: str) -> datetime | None:
    """ISO 8601 date or time from the command line; UTC when it names no zone."""
    if value is None:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(
            "(command line)",
            option,
            f"'{value}' is not a date",
            "write it like 2027-06-01 or 2027-06-01T11:30Z",
        ) from None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def date_range(start_after: str | None, end_before: str | None) -> tuple[datetime | None, datetime | None]:
    """--start-after and --end-before of `find` and `buy`."""
    return parse_time(start_after, "--start-after"), parse_time(end_before, "--end-before")


def regions_asked(regions: Sequence[str], cfg: ClusterConfig | None) -> list[str]:
    if regions:
        return list(dict.fromkeys(regions))
    if cfg is not None:
        return [cfg.region]
    raise BadInput(
        "(command line)", "--region", "no region given", "pass --region R (repeat it) or --config FILE"
    )


def find(out: Console, regions: Sequence[str], request: offerings.Request) -> int:
    """The offerings of every region that answered; exit 1 when none did, or one failed."""
    found, failed = offerings.find_offerings(Clients(), regions, request)
    offerings.remember(found)
    searched = [region for region in regions if region not in {exc.region for exc in failed}]
    title = f"{request.count} x {request.instance_type} for {request.days} days in {', '.join(searched)}"
    if found:
        print_table(
            out, table(f"Capacity Block offerings: {title}", offerings.COLUMNS, offerings.rows(found))
        )
        out.print(
            "buy one with `gpucluster capacity buy OFFERING --config FILE`", highlight=False, soft_wrap=True
        )
    elif searched:
        out.print(
            f"no Capacity Block offerings: {title}; try other dates, days, counts or regions", highlight=False
        )
    for exc in failed:
        report_problem(exc)
    return 0 if found and not failed else 1


def buy(
    out: Console,
    cfg: ClusterConfig,
    config: Path,
    offering_id: str,
    group: str | None,
    search: lookup.Search,
    confirm: Callable[[], None],
) -> None:
    offering = lookup.offering_for_buy(cfg, config, offering_id, group, search)
    index = purchase.pick_group(cfg, config, offering.instance_type, group)
    purchase.check_purchase(cfg, config, offering, index)
    for line in purchase.charge_lines(offering):
        out.print(line, highlight=False, soft_wrap=True)
    confirm()
    bought = purchase.buy(Clients(), offering)
    try:
        purchase.write_block(config, index, cfg, bought)
    except BadInput:
        # Paid for but not written: the user must not lose the id.
        out.print(
            f"[red]bought {bought.reservation_id} ({bought.availability_zone}, "
            f"{bought.start:%Y-%m-%dT%H:%MZ} to {bought.end:%Y-%m-%dT%H:%MZ}) but {config} was not "
            f"changed; put these into compute_groups.{index}.capacity by hand[/red]",
            highlight=False,
            soft_wrap=True,
        )
        raise
    out.print(
        f"[green]bought[/green] {bought.reservation_id}; {config}: compute group "
        f"{cfg.compute_groups[index].name} now uses it ({bought.start:%Y-%m-%d %H:%M} to "
        f"{bought.end:%Y-%m-%d %H:%M} UTC, {bought.availability_zone})",
        highlight=False,
        soft_wrap=True,
    )


def selected(cfg: ClusterConfig | None, ids: Sequence[str], region: str | None) -> tuple[str, list[str]]:
    """The region and reservation ids a show/wait is about: ids given, or the config's."""
    if cfg is not None and not ids:
        found = list(reservations.config_reservations(cfg))
        if not found:
            raise BadInput(
                "(config)", "compute_groups", "no group names a reservation", "buy one: capacity buy"
            )
        return region or cfg.region, found
    if not ids:
        raise BadInput(
            "(command line)", "RESERVATION_ID", "nothing to show", "pass --config FILE or reservation ids"
        )
    if region is None and cfg is None:
        raise BadInput("(command line)", "--region", "no region given", "pass --region R or --config FILE")
    return region or (cfg.region if cfg else ""), list(ids)


def show(out: Console, region: str, ids: Sequence[str]) -> int:
    """The table of `ids`; exit 1 when EC2 does not list one of them."""
    now = current_time()
    found = reservations.describe(Clients(), region, ids)
    rows = [reservations.row(r, now) for r in found]
    missing = [rid for rid in ids if rid not in {r.reservation_id for r in found}]
    rows += [(rid, "-", "-", "-", "not found", "-", "-", "-") for rid in missing]
    print_table(out, table(f"capacity reservations in {region}", reservations.ROW_COLUMNS, rows))
    if missing:
        out.print(
            f"[red]not found in {region}[/red]: {', '.join(missing)}; check the ids and the region",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    return 0


def wait(out: Console, region: str, ids: Sequence[str], timeout: timedelta, poll: timedelta) -> int:
    started = datetime.now(UTC)

    def stamp() -> str:
        waited = int((datetime.now(UTC) - started).total_seconds())
        return f"[{waited // 60:02d}:{waited % 60:02d}]"

    def progress(current: list[reservations.Reservation]) -> None:
        states = ", ".join(f"{r.reservation_id} {r.state}" for r in current)
        out.print(f"{stamp()} {states}", highlight=False, soft_wrap=True)

    def retrying(failure: AwsError, pause: float) -> None:
        out.print(
            f"{stamp()} {failure.call} ({failure.region}): {failure.what}; retrying in {pause:.0f} s "
            f"(until the --timeout of {timeout})",
            highlight=False,
            soft_wrap=True,
            markup=False,
        )

    result = reservations.wait_active(Clients(), region, ids, timeout, poll, progress, on_retry=retrying)
    missing = sorted(set(ids) - {r.reservation_id for r in result.reservations})
    if missing:
        # EC2 answered without them: waiting longer would not make them appear.
        out.print(
            f"[red]{', '.join(missing)} not found in {region}[/red]; check the ids and the region "
            "(`capacity show`)",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    if result.done:
        out.print(
            "[green]active[/green]: every reservation can launch instances", highlight=False, soft_wrap=True
        )
        return 0
    if result.failed:
        for r in result.failed:
            out.print(
                f"[red]{r.reservation_id} is {r.state}[/red]: it will never become active; "
                "check billing (payment-failed) or buy a new block",
                highlight=False,
                soft_wrap=True,
            )
        return 1
    out.print(
        f"[yellow]timeout[/yellow] after {timeout}: not every reservation is active; "
        "a block becomes active at its start time (see `capacity show`)",
        highlight=False,
        soft_wrap=True,
    )
    return 1


def block_group(cfg: ClusterConfig, config: Path, group: str | None) -> int:
    if group is not None:
        index = group_index(cfg, config, group)
        if not isinstance(cfg.compute_groups[index].capacity, CapacityBlockCapacity):
            raise BadInput.option(
                "--group", f"group {group} of {config} has no Capacity Block", "pass a group that has one"
            )
        return index
    blocks = [i for i, g in enumerate(cfg.compute_groups) if isinstance(g.capacity, CapacityBlockCapacity)]
    if len(blocks) == 1:
        return blocks[0]
    if not blocks:
        raise BadInput(config, "compute_groups", "has no Capacity Block group", "buy one: capacity buy")
    raise BadInput.option(
        "--group", f"{config} has several Capacity Block groups", "name the one to extend with --group NAME"
    )


def extend(
    out: Console,
    cfg: ClusterConfig,
    config: Path,
    group: str | None,
    days: int,
    offering_id: str | None,
    confirm: Callable[[], None],
) -> int:
    index = block_group(cfg, config, group)
    capacity = cfg.compute_groups[index].capacity
    assert isinstance(capacity, CapacityBlockCapacity)  # block_group picked a block group
    found = purchase.extension_offerings(Clients(), cfg.region, capacity.reservation_id, days)
    rows = [
        (e.offering_id, str(e.hours), f"{e.new_end:%Y-%m-%d %H:%M}", f"{e.upfront_fee:,.2f}", e.currency)
        for e in found
    ]
    if not found:
        out.print(
            f"no extension of {days} days is offered for {capacity.reservation_id}; try fewer days",
            highlight=False,
            soft_wrap=True,
        )
        return 1
    print_table(out, table(f"extensions of {capacity.reservation_id}", purchase.EXTENSION_COLUMNS, rows))
    chosen = [e for e in found if offering_id in (None, e.offering_id)]
    if offering_id is None and len(found) > 1:
        raise BadInput(
            "(command line)", "--offering", "several extensions are offered", "pick one with --offering ID"
        )
    if not chosen:
        raise BadInput(
            "(command line)", "--offering", f"{offering_id} is not offered", "pick one from the table"
        )
    extension = chosen[0]
    purchase.check_extension(config, index, extension)
    out.print(
        f"charged now  {extension.upfront_fee:,.2f} {extension.currency}, not refundable; "
        f"new end {extension.new_end:%Y-%m-%d %H:%M} UTC",
        highlight=False,
        soft_wrap=True,
    )
    confirm()
    end = purchase.buy_extension(Clients(), cfg.region, extension)
    try:
        purchase.write_end(config, index, end)
    except BadInput:
        out.print(
            f"[red]extended {capacity.reservation_id} to {end:%Y-%m-%dT%H:%MZ} but {config} was not "
            f"changed; set compute_groups.{index}.capacity.end by hand[/red]",
            highlight=False,
            soft_wrap=True,
        )
        raise
    out.print(
        f"[green]extended[/green] {capacity.reservation_id} to {end:%Y-%m-%d %H:%M} UTC; {config} updated",
        highlight=False,
        soft_wrap=True,
    )
    return 0

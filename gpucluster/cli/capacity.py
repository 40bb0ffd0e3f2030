"""`gpucluster capacity find|buy|show|wait|extend`: Capacity Blocks from the workstation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gpucluster.cli.root import load_checked, out, verb_group
from gpucluster.cli.runner import VerbCommand

capacity_app = verb_group("capacity", "Find, buy, show, wait for and extend EC2 Capacity Blocks (calls AWS).")
ConfigOption = Annotated[
    Path | None, typer.Option("--config", metavar="CONFIG", help="Cluster config YAML.", show_default=False)
]
GroupOption = Annotated[
    str | None, typer.Option("--group", metavar="NAME", help="Compute group (when the config has several).")
]
YesOption = Annotated[bool, typer.Option("--yes", help="Buy without asking (the charge is still printed).")]
StartAfterOption = Annotated[
    str | None,
    typer.Option("--start-after", metavar="DATE", help="Earliest start (UTC), e.g. 2027-06-01."),
]
EndBeforeOption = Annotated[
    str | None, typer.Option("--end-before", metavar="DATE", help="Latest end (UTC).")
]


def _confirm(yes: bool) -> None:
    if not yes:
        typer.confirm("Buy? The upfront fee is charged now and not refunded", abort=True)


@capacity_app.command("find", cls=VerbCommand)
def capacity_find(
    instance_type: Annotated[str, typer.Option("--instance-type", metavar="TYPE", help="e.g. p5.48xlarge.")],
    count: Annotated[int, typer.Option("--count", metavar="N", help="Instances: 1, 2, 4, 8, 16, 32 or 64.")],
    days: Annotated[int, typer.Option("--days", metavar="D", help="1-14, or 21-182 in 7-day steps.")],
    region: Annotated[
        list[str] | None, typer.Option("--region", metavar="R", help="Region to search; repeat for several.")
    ] = None,
    start_after: StartAfterOption = None,
    end_before: EndBeforeOption = None,
    config: ConfigOption = None,
) -> None:
    """Capacity Block offerings, soonest then cheapest first, with the price per GPU-hour."""
    from gpucluster.capacity import commands
    from gpucluster.capacity.offerings import Request

    request = Request(instance_type, count, days, *commands.date_range(start_after, end_before))
    regions = commands.regions_asked(region or [], load_checked(config) if config else None)
    raise typer.Exit(commands.find(out, regions, request))


@capacity_app.command("buy", cls=VerbCommand)
def capacity_buy(
    offering: Annotated[
        str, typer.Argument(metavar="OFFERING_ID", help="An id from `capacity find` or the console.")
    ],
    config: Annotated[
        Path, typer.Option("--config", metavar="CONFIG", help="Config to write the block into.")
    ],
    group: GroupOption = None,
    instance_type: Annotated[
        str | None,
        typer.Option(
            "--instance-type",
            metavar="TYPE",
            help="Offering's type, when `capacity find` did not show it here (default: the group's).",
        ),
    ] = None,
    count: Annotated[
        int | None,
        typer.Option("--count", metavar="N", help="Offering's instances (default: the group's count)."),
    ] = None,
    days: Annotated[
        int | None,
        typer.Option("--days", metavar="D", help="Offering's length in days (default: the group's block)."),
    ] = None,
    start_after: StartAfterOption = None,
    end_before: EndBeforeOption = None,
    yes: YesOption = False,
) -> None:
    """Buy a Capacity Block and write its id, dates and AZ into the config."""
    from gpucluster.capacity import commands
    from gpucluster.capacity.lookup import Search

    search = Search(instance_type, count, days, *commands.date_range(start_after, end_before))
    commands.buy(out, load_checked(config), config, offering, group, search, lambda: _confirm(yes))


def _selection(config: Path | None, ids: list[str] | None, region: str | None) -> tuple[str, list[str]]:
    from gpucluster.capacity import commands

    return commands.selected(load_checked(config) if config else None, ids or [], region)


ReservationIds = Annotated[
    list[str] | None,
    typer.Argument(metavar="RESERVATION_ID...", help="Reservation ids (instead of --config)."),
]
RegionOption = Annotated[
    str | None, typer.Option("--region", metavar="R", help="Region of the reservations.")
]


@capacity_app.command("show", cls=VerbCommand)
def capacity_show(
    ids: ReservationIds = None, config: ConfigOption = None, region: RegionOption = None
) -> None:
    """State, dates and time left of the config's reservations (or the ids given); 1: one is missing."""
    from gpucluster.capacity import commands

    raise typer.Exit(commands.show(out, *_selection(config, ids, region)))


@capacity_app.command("wait", cls=VerbCommand)
def capacity_wait(
    ids: ReservationIds = None,
    config: ConfigOption = None,
    region: RegionOption = None,
    timeout: Annotated[
        int, typer.Option("--timeout", metavar="MIN", min=1, max=24 * 60, help="Give up after.")
    ] = 30,
    poll: Annotated[
        int, typer.Option("--poll", metavar="SEC", min=5, max=600, help="Seconds between checks.")
    ] = 30,
) -> None:
    """Wait until every reservation is active: exit 0 active, 1 failed or timed out."""
    from datetime import timedelta

    from gpucluster.capacity import commands

    selected_region, selected_ids = _selection(config, ids, region)
    raise typer.Exit(
        commands.wait(out, selected_region, selected_ids, timedelta(minutes=timeout), timedelta(seconds=poll))
    )


@capacity_app.command("extend", cls=VerbCommand)
def capacity_extend(
    config: Annotated[
        Path, typer.Option("--config", metavar="CONFIG", help="Config of the block to extend.")
    ],
    days: Annotated[int, typer.Option("--days", metavar="D", min=1, max=182, help="Days to add.")],
    group: GroupOption = None,
    offering: Annotated[
        str | None, typer.Option("--offering", metavar="ID", help="Extension offering, when several.")
    ] = None,
    yes: YesOption = False,
) -> None:
    """Extend the config's Capacity Block and move its end date in the config."""
    from gpucluster.capacity import commands

    raise typer.Exit(
        commands.extend(out, load_checked(config), config, group, days, offering, lambda: _confirm(yes))
    )

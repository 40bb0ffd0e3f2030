"""The Slurm maintenance reservation that keeps new jobs off a Capacity Block's nodes
before EC2 reclaims them.

One reservation per compute group, on the group's partition (named after the group,
holding the nodes whose feature is the group's name):

    scontrol create reservation ReservationName=<group>-capacity-block-end
        PartitionName=<group> Nodes=ALL Flags=MAINT,IGNORE_JOBS,PART_NODES
        Users=root StartTime=<end - grace> EndTime=<end>

- MAINT: a maintenance reservation; it may overlap other reservations.
- IGNORE_JOBS: created even though jobs run on those nodes now; they keep running,
  and no job whose time limit reaches into the window starts.
- PART_NODES with PartitionName and Nodes=ALL: the reservation follows the
  partition's membership. Seen on Slurm 22.05.8: a dynamic node that registers later
  (`slurmd -Z`, or `scontrol create NodeName=...`) joins the reservation within a second.
- Slurm refuses such a reservation on a partition that has no node yet ("Invalid node
  name specified"), and the nodes of a block only register once it is active, while
  the jobs queued for it start the moment they do. So each group's partition holds one
  placeholder node in state FUTURE (never scheduled, hidden from sinfo), created here,
  and the reservation exists before the first real node registers.

Slurm cannot move the start of a reservation that has begun ("Reservation already
started") nor move a start into the past ("Invalid time specified"), though it creates
a reservation that began in the past; so when an extended block moves the window of an
active reservation, or a longer grace moves its start before now, it is deleted and
created again. Nodes inside an active reservation cannot be deleted from
Slurm ("Requested nodes are busy"); node_cleanup removes them once the window ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from gpucluster.agents.cluster_names import group_feature, group_partition
from gpucluster.agents.scontrol import (
    Runner,
    ScontrolError,
    checked,
    parse_records,
    parse_slurm_time,
    slurm_time,
)

RESERVATION_FLAGS = "MAINT,IGNORE_JOBS,PART_NODES"


@dataclass(frozen=True)
class MaintenanceWindow:
    start: datetime
    end: datetime

    def __post_init__(self) -> None:
        if self.start.tzinfo is None or self.end.tzinfo is None:
            raise ValueError("maintenance window times need a time zone")
        if self.start >= self.end:
            raise ValueError(f"maintenance window starts at {self.start} but ends at {self.end}")


@dataclass(frozen=True)
class CurrentReservation:
    start: datetime
    end: datetime
    active: bool

    def matches(self, window: MaintenanceWindow) -> bool:
        # Slurm keeps whole seconds.
        return (self.start, self.end) == (
            window.start.replace(microsecond=0),
            window.end.replace(microsecond=0),
        )


def reservation_name(group: str) -> str:
    return f"{group}-capacity-block-end"


def anchor_node_name(group: str) -> str:
    # Not `<group>-i-<hex>`: node_cleanup only ever considers instance-named nodes.
    return f"{group}-block-anchor"


def anchor_command(group: str) -> list[str]:
    """The placeholder node that lets the reservation exist before real nodes register."""
    return [
        "scontrol",
        "create",
        f"NodeName={anchor_node_name(group)}",
        f"Feature={group_feature(group)}",
        "State=FUTURE",
    ]


def reservation_command(group: str, start: datetime, end: datetime) -> list[str]:
    return [
        "scontrol",
        "create",
        "reservation",
        f"ReservationName={reservation_name(group)}",
        f"PartitionName={group_partition(group)}",
        "Nodes=ALL",
        f"Flags={RESERVATION_FLAGS}",
        "Users=root",
        f"StartTime={slurm_time(start)}",
        f"EndTime={slurm_time(end)}",
    ]


def update_command(group: str, start: datetime, end: datetime) -> list[str]:
    """Move a reservation that has not begun (both times in one request, so a window moved
    past its old end never passes through an invalid state)."""
    return [
        "scontrol",
        "update",
        f"Reservation={reservation_name(group)}",
        f"StartTime={slurm_time(start)}",
        f"EndTime={slurm_time(end)}",
    ]


def delete_command(group: str) -> list[str]:
    return ["scontrol", "delete", f"Reservation={reservation_name(group)}"]


def _not_found(output: str) -> bool:
    return "not found" in output.lower()


def read_reservation(run: Runner, group: str) -> CurrentReservation | None:
    result = run(["scontrol", "-o", "show", "reservation", reservation_name(group)])
    if result.returncode != 0:
        if _not_found(result.output):
            return None
        raise ScontrolError(result)
    records = parse_records(result.stdout)
    if len(records) != 1:
        raise ScontrolError(result)
    record = records[0]
    return CurrentReservation(
        start=parse_slurm_time(record["StartTime"]),
        end=parse_slurm_time(record["EndTime"]),
        active=record.get("State") == "ACTIVE",
    )


def ensure_anchor(run: Runner, group: str) -> bool:
    """Create the group's placeholder node unless it exists; True when it was created."""
    # FUTURE nodes are hidden from `show node` without --future.
    result = run(["scontrol", "--future", "-o", "show", "node", anchor_node_name(group)])
    if result.returncode == 0 and parse_records(result.stdout):
        return False
    if result.returncode != 0 and not _not_found(result.output):
        raise ScontrolError(result)
    checked(run(anchor_command(group)))
    return True


def ensure_maintenance(run: Runner, group: str, window: MaintenanceWindow | None, now: datetime) -> str:
    """Make the group's maintenance reservation match `window` (None: no reservation).

    Returns what was done, for the agent's log line.
    """
    current = read_reservation(run, group)
    if window is None:
        if current is None:
            return "none"
        checked(run(delete_command(group)))
        return "deleted"
    if current is None:
        created_anchor = ensure_anchor(run, group)
        checked(run(reservation_command(group, window.start, window.end)))
        return "created" + (f" with placeholder node {anchor_node_name(group)}" if created_anchor else "")
    if current.matches(window):
        return "unchanged"
    if not current.active and window.start > now:
        checked(run(update_command(group, window.start, window.end)))
        return "moved"
    checked(run(delete_command(group)))
    checked(run(reservation_command(group, window.start, window.end)))
    return "recreated (Slurm cannot move a start that is past)"

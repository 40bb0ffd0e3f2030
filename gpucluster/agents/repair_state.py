"""node_repair's record, kept in one JSON file on the head node between runs.

    {"replacements": [{"node": ..., "group": ..., "instance_id": ..., "at": ISO, "reason": ...}],
     "first_seen": {"i-...": ISO}, "tripped": {"at": ISO, "why": ...} or null,
     "cleared_at": ISO or null}

It is written whole to a temporary file and renamed over the old one, so a run killed
half-way leaves the previous record. A record that cannot be read is an error the agent
reports and stops on: starting over from an empty record would forget the bound.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from gpucluster.agents.repair_decision import RepairState, Replacement, Trip

# systemd's StateDirectory= of the agent's unit makes /var/lib/gpucluster-node-repair.
STATE_FILE = Path("/var/lib/gpucluster-node-repair/state.json")


class StateError(RuntimeError):
    pass


def _time(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    if moment.tzinfo is None:
        raise ValueError(f"time {value!r} has no time zone")
    return moment


def to_json(state: RepairState) -> dict[str, Any]:
    return {
        "replacements": [
            {
                "node": r.node,
                "group": r.group,
                "instance_id": r.instance_id,
                "at": r.at.isoformat(),
                "reason": r.reason,
            }
            for r in state.replacements
        ],
        "first_seen": {iid: seen.isoformat() for iid, seen in sorted(state.first_seen.items())},
        "tripped": None
        if state.tripped is None
        else {"at": state.tripped.at.isoformat(), "why": state.tripped.why},
        "cleared_at": None if state.cleared_at is None else state.cleared_at.isoformat(),
    }


def from_json(doc: dict[str, Any]) -> RepairState:
    tripped = doc.get("tripped")
    cleared = doc.get("cleared_at")
    return RepairState(
        replacements=tuple(
            Replacement(r["node"], r["group"], r["instance_id"], _time(r["at"]), r["reason"])
            for r in doc.get("replacements", [])
        ),
        first_seen={iid: _time(seen) for iid, seen in doc.get("first_seen", {}).items()},
        tripped=None if tripped is None else Trip(_time(tripped["at"]), tripped["why"]),
        cleared_at=None if cleared is None else _time(cleared),
    )


def load(path: Path = STATE_FILE) -> RepairState:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return RepairState()
    except OSError as err:
        raise StateError(f"cannot read {path}: {err.strerror}") from err
    try:
        return from_json(json.loads(text))
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise StateError(
            f"{path} is not a node_repair record ({type(err).__name__}: {err}); move it aside "
            "to start a new record (the bound then counts from zero)"
        ) from err


@contextmanager
def locked(path: Path = STATE_FILE) -> Iterator[None]:
    """Hold the record's lock, waiting for another holder: without it a run that read the
    record before a person cleared the alert would write the alert back (or the clear would
    drop that run's replacements from the bound)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.with_name(f"{path.name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def save(state: RepairState, path: Path = STATE_FILE) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(to_json(state), indent=1) + "\n")
    os.replace(partial, path)

"""Reading slurmctld's answers with production's parser (gpucluster/agents/scontrol.py),
so the suite reads a record exactly as the agents do: where a key repeats in a line, as
`State=` can inside a free-text Reason, the first value wins."""

from __future__ import annotations

from gpucluster.agents.scontrol import parse_records
from tests.integration.host import HarnessError


def one_record(text: str) -> dict[str, str]:
    """The single record of a `scontrol -o show <kind> <name>` answer."""
    records = parse_records(text)
    if len(records) != 1:
        raise HarnessError(f"expected one scontrol record, got {len(records)}: {text.strip()!r}")
    return records[0]


def node_states(info: dict[str, str]) -> set[str]:
    """`IDLE+DRAIN+DYNAMIC_NORM` -> {"IDLE", "DRAIN", "DYNAMIC_NORM"}; `IDLE*` -> {"IDLE",
    "NOT_RESPONDING"} (scontrol marks a node that misses pings with a trailing `*`)."""
    states = set()
    for part in info["State"].split("+"):
        if part.endswith("*"):
            states.add("NOT_RESPONDING")
        states.add(part.rstrip("*~#%$@!^-"))
    return states

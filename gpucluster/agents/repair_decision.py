"""Which failed nodes node_repair replaces now, decided from what Slurm shows and what the
agent did before: no AWS call, no scontrol and no clock, so every case is a function call.

A compute node is replaced (its instance terminated so Auto Scaling launches another into
the same reservation) when all hold:

- it is drained or down for a reason one of our checks set (health_reasons.classify:
  "check"), or Slurm set it DOWN as "Not responding" at least `grace` ago; a reason a
  person set is never touched;
- no job runs on it, or it has been drained for `grace` already (its jobs are requeued
  first: a wedged GPU must not hold a block's node for ever);
- its instance was never replaced before (a node is replaced once; a replacement that
  fails its checks again gets a new instance id and its own turn);
- replacement is on, the bound has not tripped, and fewer than `max_per_hour` nodes were
  replaced in the last hour (since a person last cleared the alert).

When more nodes qualify than the bound leaves, the oldest failures are replaced and the
bound trips: nothing more is replaced, on any later run, until a person clears it. A bad
AMI, a broken EFA security group or a driver fault fails every node, and replacing them
all would churn the block while fixing nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from gpucluster.agents.health_reasons import classify

WINDOW = timedelta(hours=1)
BUSY_STATES = frozenset({"ALLOCATED", "MIXED", "COMPLETING"})
DRAINED_STATES = frozenset({"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL"})
UNREACHABLE_STATES = frozenset({"DOWN", "NOT_RESPONDING"})
# How many replacements the record keeps: far more than any bound needs.
HISTORY = 200


@dataclass(frozen=True)
class Policy:
    enabled: bool = True
    max_per_hour: int = 2
    grace: timedelta = timedelta(minutes=10)

    def __post_init__(self) -> None:
        if self.max_per_hour < 1:
            raise ValueError(f"max_per_hour must be at least 1, got {self.max_per_hour}")
        if self.grace < timedelta(0):
            raise ValueError(f"grace must not be negative, got {self.grace}")


@dataclass(frozen=True)
class NodeView:
    """One instance-named compute node as slurmctld shows it."""

    name: str
    group: str
    instance_id: str
    states: frozenset[str]
    reason: str = ""
    # When the reason was set (scontrol's `[user@time]`); None when there is none.
    reason_time: datetime | None = None

    @property
    def busy(self) -> bool:
        return bool(self.states & BUSY_STATES)


@dataclass(frozen=True)
class Replacement:
    node: str
    group: str
    instance_id: str
    at: datetime
    reason: str


@dataclass(frozen=True)
class Trip:
    at: datetime
    why: str


@dataclass(frozen=True)
class RepairState:
    """What the agent remembers between runs (repair_state keeps it in a file)."""

    replacements: tuple[Replacement, ...] = ()
    # Instance id -> when the agent first saw its node failed: a reason a check rewrites
    # (a different probe failing) resets Slurm's reason time, not the grace.
    first_seen: dict[str, datetime] = field(default_factory=dict)
    tripped: Trip | None = None
    cleared_at: datetime | None = None

    def replaced(self, instance_id: str) -> Replacement | None:
        return next((r for r in self.replacements if r.instance_id == instance_id), None)

    def counted(self, now: datetime) -> list[Replacement]:
        """The replacements the bound counts at `now`: the last hour's, since the last clear."""
        return [
            r
            for r in self.replacements
            if r.at > now - WINDOW and (self.cleared_at is None or r.at >= self.cleared_at)
        ]

    def record(self, replacement: Replacement) -> RepairState:
        kept = (*self.replacements, replacement)[-HISTORY:]
        return replace(self, replacements=kept)

    def clear(self, now: datetime) -> RepairState:
        return replace(self, tripped=None, cleared_at=now)


Action = Literal["replace", "wait", "leave"]


@dataclass(frozen=True)
class Verdict:
    node: NodeView
    action: Action
    why: str
    # Jobs still run on it: node_repair requeues them before the instance goes.
    requeue: bool = False


@dataclass(frozen=True)
class Plan:
    verdicts: list[Verdict]
    # The state to keep whether or not the replacements succeed (first_seen, a new trip);
    # node_repair records each replacement that Auto Scaling accepted on top of it.
    state: RepairState
    # Set on the run that trips the bound: what the ALERT line says.
    alert: str | None = None

    @property
    def to_replace(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.action == "replace"]


def _failed(node: NodeView) -> Literal["check", "unreachable", "person"] | None:
    """Why the node is out of service, or None when it is in service."""
    if not node.states & DRAINED_STATES and "NOT_RESPONDING" not in node.states:
        return None
    if not node.reason.strip():
        # NOT_RESPONDING for a moment without a reason yet: nothing has taken it out of service.
        return None
    kind = classify(node.reason)
    if kind == "unreachable" and not node.states & UNREACHABLE_STATES:
        return "person"
    return kind


def _minutes(delta: timedelta) -> str:
    return f"{int(delta.total_seconds() // 60)} min"


def suspects(nodes: Sequence[NodeView], state: RepairState) -> list[NodeView]:
    """The nodes a check (or Slurm) took out of service that were not replaced yet: the ones
    whose instances node_repair asks EC2 about before deciding."""
    return [
        node
        for node in nodes
        if _failed(node) in ("check", "unreachable") and state.replaced(node.instance_id) is None
    ]


def decide(
    nodes: Sequence[NodeView],
    state: RepairState,
    policy: Policy,
    now: datetime,
    gone: frozenset[str] = frozenset(),
) -> Plan:
    """`gone`: instance ids EC2 reports shutting down or terminated (or does not know). Such a
    node is not replaced and not counted: its group already replaces it (or a Capacity
    Block ended) and node_cleanup removes its record. Without this, the end of a block,
    where every node stops answering at once, would trip the bound."""
    if now.tzinfo is None:
        raise ValueError("now has no time zone; pass an aware datetime")
    first_seen: dict[str, datetime] = {}
    verdicts: list[Verdict] = []
    ready: list[tuple[datetime, Verdict]] = []
    for node in nodes:
        kind = _failed(node)
        if kind is None:
            continue
        if kind == "person":
            verdicts.append(Verdict(node, "leave", f"drained by a person ({node.reason!r}): left alone"))
            continue
        done = state.replaced(node.instance_id)
        if done is not None:
            verdicts.append(Verdict(node, "leave", f"instance replaced at {done.at.isoformat()}"))
            continue
        if node.instance_id in gone:
            verdicts.append(Verdict(node, "leave", "instance already gone (EC2); node_cleanup removes it"))
            continue
        seen = state.first_seen.get(node.instance_id, now)
        if node.reason_time is not None and node.reason_time < seen:
            seen = node.reason_time
        first_seen[node.instance_id] = seen
        waited = now - seen
        late = waited >= policy.grace
        if kind == "unreachable" and not late:
            why = f"not responding for {_minutes(waited)}; replaced after {_minutes(policy.grace)}"
            verdicts.append(Verdict(node, "wait", why))
        elif node.busy and not late:
            why = f"a job still runs; waiting up to {_minutes(policy.grace)} ({_minutes(waited)} so far)"
            verdicts.append(Verdict(node, "wait", why))
        else:
            ready.append((seen, Verdict(node, "replace", f"failed: {node.reason}", requeue=node.busy)))
    kept = replace(state, first_seen=first_seen)
    if not ready:
        return Plan(verdicts, kept)
    ready.sort(key=lambda item: (item[0], item[1].node.name))
    if not policy.enabled:
        off = "replacement is off (health.replace_failed_nodes); left drained"
        return Plan(verdicts + [replace(v, action="leave", why=off) for _, v in ready], kept)
    if state.tripped is not None:
        stopped = f"replacement stopped by the bound since {state.tripped.at.isoformat()}; left drained"
        return Plan(verdicts + [replace(v, action="wait", why=stopped) for _, v in ready], kept)
    room = max(policy.max_per_hour - len(state.counted(now)), 0)
    chosen = [v for _, v in ready[:room]]
    refused = [v for _, v in ready[room:]]
    if not refused:
        return Plan(verdicts + chosen, kept)
    why = (
        f"{len(ready)} nodes failed and the bound allows {policy.max_per_hour} replacements per hour "
        f"({len(state.counted(now))} done in the last hour): "
        f"{', '.join(v.node.name for _, v in ready)}"
    )
    stopped = "over the bound; left drained"
    return Plan(
        verdicts + chosen + [replace(v, action="wait", why=stopped) for v in refused],
        replace(kept, tripped=Trip(now, why)),
        alert=why,
    )

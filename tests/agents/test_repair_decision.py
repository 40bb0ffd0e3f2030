"""repair_decision: which failed nodes are replaced, by example and as properties that hold
over any sequence of runs (the bound, once per instance, a person's drain untouched, the
grace for a node that still runs a job)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucluster.agents.health_reasons import CHECK_PREFIXES, classify, drain_reason, replaced_reason
from gpucluster.agents.repair_decision import WINDOW, NodeView, Policy, RepairState, Replacement, decide

NOW = datetime(2026, 12, 4, 21, 0, tzinfo=UTC)
GRACE = timedelta(minutes=10)


def node(
    n: int, states: str = "IDLE+DRAIN", reason: str = "healthcheck: GPU count 7, want 8", ago: int = 0
) -> NodeView:
    iid = f"i-{n:017x}"
    return NodeView(
        name=f"gpu-{iid}",
        group="gpu",
        instance_id=iid,
        states=frozenset(states.split("+")),
        reason=reason,
        reason_time=NOW - timedelta(minutes=ago) if reason else None,
    )


def actions(plan) -> dict[str, str]:
    return {v.node.name: v.action for v in plan.verdicts}


@pytest.mark.parametrize("prefix", CHECK_PREFIXES)
def test_every_check_prefix_counts_and_anything_else_is_a_persons(prefix):
    assert classify(drain_reason(prefix, "nvidia-smi hung")) == "check"
    assert classify("Not responding") == "unreachable"
    for reason in ("maintenance", "healthcheck", "healthchecks: x", "Kill task failed", f"{prefix}:x", ""):
        assert classify(reason) == "person", reason
    with pytest.raises(ValueError, match="not one of gpucluster's check prefixes"):
        drain_reason("gpu", "x")


def test_slurms_drain_for_a_failed_prolog_is_the_prolog_checks():
    # The Prolog is the health check; Slurm drains so when a hung probe outlived
    # PrologEpilogTimeout before the check could drain with its own reason.
    assert classify("Prolog error") == "check"
    failed = node(1, reason="Prolog error")
    assert actions(decide([failed], RepairState(), Policy(), NOW)) == {failed.name: "replace"}


def test_a_prefix_no_check_of_ours_sets_is_a_persons():
    # No Epilog check drains a node: a person's "epilog: ..." reason must keep the node.
    assert classify("epilog: stuck job cleaned up by hand") == "person"


def test_the_replaced_note_keeps_the_reason_and_its_kind():
    noted = replaced_reason("healthcheck: GPU count 7, want 8", "i-0123", "2026-12-04T21:00:00Z")
    assert noted == "healthcheck: GPU count 7, want 8; replaced i-0123 at 2026-12-04T21:00:00Z"
    assert classify(noted) == "check"
    assert classify(replaced_reason("Not responding", "i-0123", "t")) == "unreachable"
    assert (
        replaced_reason(noted, "i-0123", "later")
        == "healthcheck: GPU count 7, want 8; replaced i-0123 at later"
    )


def test_an_idle_drained_node_is_replaced_and_a_busy_one_waits_for_the_grace():
    idle, busy, late = node(1), node(2, "MIXED+DRAIN", ago=3), node(3, "ALLOCATED+DRAIN", ago=10)
    plan = decide([idle, busy, late], RepairState(), Policy(max_per_hour=5, grace=GRACE), NOW)
    assert actions(plan) == {idle.name: "replace", busy.name: "wait", late.name: "replace"}
    requeue = {v.node.name: v.requeue for v in plan.to_replace}
    assert requeue == {idle.name: False, late.name: True}


def test_healthy_nodes_and_persons_drains_are_never_replaced():
    plan = decide(
        [
            node(1, "IDLE", reason=""),
            node(2, "IDLE+DRAIN", reason="cable swap, bob", ago=999),
            node(3, "IDLE+NOT_RESPONDING", reason=""),
        ],
        RepairState(),
        Policy(grace=timedelta(0)),
        NOW,
    )
    assert plan.to_replace == [] and plan.alert is None
    assert actions(plan) == {node(2).name: "leave"}


def test_an_unreachable_node_is_replaced_only_after_the_grace():
    down = node(1, "DOWN+NOT_RESPONDING", reason="Not responding", ago=4)
    assert actions(decide([down], RepairState(), Policy(grace=GRACE), NOW)) == {down.name: "wait"}
    later = NOW + timedelta(minutes=6)
    assert actions(decide([down], RepairState(), Policy(grace=GRACE), later)) == {down.name: "replace"}


def test_the_grace_runs_from_the_first_sighting_even_when_the_reason_is_rewritten():
    busy = node(1, "MIXED+DRAIN", ago=0)
    first = decide([busy], RepairState(), Policy(grace=GRACE), NOW)
    rewritten = node(1, "MIXED+DRAIN", reason="healthcheck: GPU count 6, want 8", ago=-9)
    plan = decide([rewritten], first.state, Policy(grace=GRACE), NOW + GRACE)
    assert actions(plan) == {busy.name: "replace"}


def test_replacement_off_leaves_failed_nodes_drained():
    plan = decide([node(1)], RepairState(), Policy(enabled=False), NOW)
    assert plan.to_replace == [] and "replacement is off" in plan.verdicts[0].why


def test_more_failures_than_the_bound_replace_the_oldest_and_trip_until_cleared():
    nodes = [node(1, ago=1), node(2, ago=5), node(3, ago=3)]
    plan = decide(nodes, RepairState(), Policy(max_per_hour=2), NOW)
    assert [v.node.name for v in plan.to_replace] == [nodes[1].name, nodes[2].name]
    assert plan.alert is not None and "3 nodes failed and the bound allows 2" in plan.alert
    state = plan.state
    for v in plan.to_replace:
        state = state.record(Replacement(v.node.name, "gpu", v.node.instance_id, NOW, v.node.reason))
    days_later = NOW + timedelta(days=2)
    assert decide(nodes, state, Policy(max_per_hour=2), days_later).to_replace == []
    cleared = decide(nodes, state.clear(days_later), Policy(max_per_hour=2), days_later)
    assert [v.node.name for v in cleared.to_replace] == [nodes[0].name]


# --- properties over any sequence of runs ---------------------------------------------

PERSON = "reserved for a firmware test"


@st.composite
def runs(draw):
    """A sequence of (minutes since the last run, nodes as slurmctld shows them, the instance
    ids EC2 says are gone, clear?)."""
    steps = []
    for _ in range(draw(st.integers(1, 25))):
        gap = draw(st.integers(0, 90))
        shown = []
        for n in draw(st.sets(st.integers(1, 12), max_size=8)):
            kind = draw(st.sampled_from(["healthy", "check", "busy-check", "person", "unreachable"]))
            ago = draw(st.integers(0, 30))
            shown.append(
                {
                    "healthy": node(n, "IDLE", reason=""),
                    "check": node(n, "IDLE+DRAIN", ago=ago),
                    "busy-check": node(n, "MIXED+DRAIN", ago=ago),
                    "person": node(n, "IDLE+DRAIN", reason=PERSON, ago=ago),
                    "unreachable": node(n, "DOWN+NOT_RESPONDING", reason="Not responding", ago=ago),
                }[kind]
            )
        gone = frozenset(n.instance_id for n in shown if draw(st.integers(0, 4)) == 0)
        steps.append((gap, shown, gone, draw(st.booleans()) and draw(st.booleans())))
    return steps


@settings(max_examples=300, deadline=None)
@given(steps=runs(), bound=st.integers(1, 3), accepted=st.lists(st.booleans(), min_size=40, max_size=40))
def test_over_any_sequence_of_runs_the_bound_holds_and_nothing_flaps(steps, bound, accepted):
    policy = Policy(max_per_hour=bound, grace=GRACE)
    state, now, done = RepairState(), NOW, []
    clears = []
    for gap, shown, gone, clear in steps:
        now += timedelta(minutes=gap)
        if clear and state.tripped is not None:
            state = state.clear(now)
            clears.append(now)
        plan = decide(shown, state, policy, now, gone)
        was_tripped = state.tripped is not None
        state = plan.state
        for verdict in plan.to_replace:
            n = verdict.node
            assert not was_tripped, "nothing is replaced while the bound is tripped"
            assert n.reason != PERSON, "a person's drain is never replaced"
            assert n.instance_id not in gone, "an instance already gone is left to its group"
            assert n.instance_id not in {r.instance_id for r in done}, "an instance is replaced once"
            if n.busy and "NOT_RESPONDING" not in n.states:
                seen = min(x for x in (state.first_seen[n.instance_id], n.reason_time) if x)
                assert now - seen >= GRACE, "a node running a job keeps it for the grace"
            # Auto Scaling may refuse a call; only accepted ones are recorded and counted.
            if accepted[len(done) % len(accepted)]:
                replacement = Replacement(n.name, n.group, n.instance_id, now, n.reason)
                state = state.record(replacement)
                done.append(replacement)
    for replacement in done:
        cleared = max([c for c in clears if c <= replacement.at], default=None)
        in_window = [
            r
            for r in done[: done.index(replacement) + 1]
            if r.at > replacement.at - WINDOW and (cleared is None or r.at >= cleared)
        ]
        assert len(in_window) <= bound, (bound, [(r.node, r.at) for r in in_window])


def test_a_node_whose_instance_is_gone_is_left_to_node_cleanup_and_not_counted():
    nodes = [node(n, "DOWN+NOT_RESPONDING", reason="Not responding", ago=60) for n in range(1, 5)]
    gone = frozenset(n.instance_id for n in nodes[:3])
    plan = decide(nodes, RepairState(), Policy(max_per_hour=1), NOW, gone)
    assert [v.node.name for v in plan.to_replace] == [nodes[3].name]
    assert plan.alert is None and plan.state.tripped is None
    assert {v.why for v in plan.verdicts if v.action == "leave"} == {
        "instance already gone (EC2); node_cleanup removes it"
    }

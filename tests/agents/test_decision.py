"""The controller's decision, a pure function of the clock and the block: how many nodes
run and when the maintenance window starts, with fixed moments and with Hypothesis."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpucluster.agents import block_decision
from tests.agents.fakes import END, GRACE, LEAD, START

EC2_STATES = [
    "active",
    "expired",
    "cancelled",
    "pending",
    "failed",
    "scheduled",
    "payment-pending",
    "payment-failed",
    "assessing",
    "delayed",
    "unsupported",
    "cancelling",
    "unavailable",
]


def test_deployed_after_the_block_began_runs_the_full_count():
    decision = block_decision.decide(START + timedelta(days=3), "active", START, END, 8, GRACE)
    assert decision.desired_capacity == 8
    assert decision.maintenance_start == END - GRACE


def test_extended_block_keeps_nodes_past_the_old_end():
    now = END - timedelta(minutes=40)
    assert block_decision.decide(now, "active", START, END, 8, GRACE).desired_capacity == 8
    # Past the old scale-in point, only the extension keeps the nodes.
    later = END - timedelta(minutes=20)
    assert block_decision.decide(later, "active", START, END, 8, GRACE).desired_capacity == 0
    extended = block_decision.decide(later, "active", START, END + timedelta(days=7), 8, GRACE)
    assert extended.desired_capacity == 8
    assert extended.maintenance_start == END + timedelta(days=7) - GRACE


@pytest.mark.parametrize("state", ["expired", "cancelled", "payment-failed", "failed"])
def test_a_dead_block_scales_to_zero_without_maintenance(state):
    decision = block_decision.decide(START + timedelta(days=1), state, START, END, 8, GRACE)
    assert decision.desired_capacity == 0
    assert decision.maintenance_start is None
    assert state in decision.reason


@pytest.mark.parametrize("state", ["scheduled", "payment-pending"])
def test_an_upcoming_block_has_no_nodes_but_its_maintenance_window(state):
    decision = block_decision.decide(START - timedelta(days=2), state, START, END, 8, GRACE)
    assert decision.desired_capacity == 0
    assert decision.maintenance_start == END - GRACE


def test_the_clock_crossing_end_minus_35_minutes_scales_in():
    just_before = block_decision.decide(END - LEAD - timedelta(seconds=1), "active", START, END, 2, GRACE)
    at = block_decision.decide(END - LEAD, "active", START, END, 2, GRACE)
    assert just_before.desired_capacity == 2
    assert at.desired_capacity == 0
    assert "scale-in" in at.reason


def test_an_expired_block_past_its_end_has_no_window_even_if_ec2_lags():
    decision = block_decision.decide(END + timedelta(minutes=1), "active", START, END, 2, GRACE)
    assert decision == block_decision.Decision(0, None, decision.reason)


def test_decide_refuses_naive_times_and_a_grace_shorter_than_the_scale_in_lead():
    with pytest.raises(ValueError, match="time zone"):
        block_decision.decide(datetime(2026, 12, 12), "active", START, END, 2, GRACE)
    with pytest.raises(ValueError, match="scale-in lead"):
        block_decision.decide(START, "active", START, END, 2, timedelta(minutes=34))


moments = st.datetimes(
    min_value=datetime(2026, 1, 1), max_value=datetime(2027, 12, 31), timezones=st.just(UTC)
)
graces = st.integers(min_value=35, max_value=24 * 60).map(lambda m: timedelta(minutes=m))


# Seconds from the block's end: anywhere in a long block, and densely around the end.
offsets = st.one_of(
    st.integers(min_value=-200 * 86400, max_value=30 * 86400),
    st.integers(min_value=-2 * 3600, max_value=3600),
)


@settings(max_examples=400, deadline=None)
@given(
    offset=offsets,
    state=st.sampled_from(EC2_STATES),
    start=moments,
    length=st.integers(min_value=1, max_value=182 * 24).map(lambda h: timedelta(hours=h)),
    count=st.integers(min_value=1, max_value=64),
    grace=graces,
)
def test_nodes_run_only_while_active_and_more_than_35_minutes_from_the_end(
    offset, state, start, length, count, grace
):
    end = start + length
    now = end + timedelta(seconds=offset)
    decision = block_decision.decide(now, state, start, end, count, grace)
    assert decision.desired_capacity in (0, count)
    if decision.desired_capacity > 0:
        assert state == "active"
        assert now < end - LEAD
    if decision.maintenance_start is not None:
        # New starts stop no later than the scale-in, and the window is still ahead or open.
        assert decision.maintenance_start <= end - LEAD
        assert now < end


@settings(max_examples=200, deadline=None)
@given(
    first=moments,
    step=st.integers(min_value=0, max_value=30 * 24 * 60).map(lambda m: timedelta(minutes=m)),
    state=st.sampled_from(EC2_STATES),
    length=st.integers(min_value=1, max_value=182 * 24).map(lambda h: timedelta(hours=h)),
    extension=st.integers(min_value=0, max_value=26 * 7).map(lambda d: timedelta(days=d)),
)
def test_no_flapping_in_time_and_an_extension_never_shrinks_the_group(first, step, state, length, extension):
    end = START + length
    earlier = block_decision.decide(first, state, START, end, 4, GRACE)
    later = block_decision.decide(first + step, state, START, end, 4, GRACE)
    assert later.desired_capacity <= earlier.desired_capacity
    extended = block_decision.decide(first, state, START, end + extension, 4, GRACE)
    assert extended.desired_capacity >= earlier.desired_capacity
    # The same facts give the same decision: a second run has nothing new to do.
    assert block_decision.decide(first, state, START, end, 4, GRACE) == earlier

"""Warmup-cosine bounds: the seed's checks, stepping per update, never past the end."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpucluster.train.schedule import ScheduleOverrun, WarmupCosine


@pytest.mark.parametrize(
    ("base_lr", "warmup", "total", "min_ratio"),
    [
        (1e-3, 10, 10, 0.1),  # warmup as long as the run: no cosine phase at all
        (1e-3, 11, 10, 0.1),
        (1e-3, -1, 10, 0.1),
        (1e-3, 0, 0, 0.1),
        (0.0, 0, 10, 0.1),
        (-1e-3, 0, 10, 0.1),
        (math.nan, 0, 10, 0.1),
        (math.inf, 0, 10, 0.1),
        (1e-3, 0, 10, 1.5),
        (1e-3, 0, 10, -0.1),
    ],
)
def test_refuses_bounds_that_make_no_schedule(base_lr, warmup, total, min_ratio):
    with pytest.raises(ValueError):
        WarmupCosine(base_lr, warmup, total, min_ratio)


def test_rates_rise_through_warmup_then_fall_to_the_floor_at_the_last_update():
    schedule = WarmupCosine(1.0, 4, 20, min_ratio=0.1)
    rates = [schedule.factor(step) for step in range(20)]
    assert rates[:4] == pytest.approx([0.2, 0.4, 0.6, 0.8])  # no update at lr 0
    assert rates[4] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(rates[4:], rates[5:], strict=False))
    assert rates[-1] == pytest.approx(0.1)


def test_factor_outside_the_run_is_an_error_not_a_rising_cosine():
    schedule = WarmupCosine(1.0, 2, 10)
    for step in (-1, 10, 11):
        with pytest.raises(ValueError):
            schedule.factor(step)


def test_stepping_past_the_end_raises_and_leaves_the_last_rate_set():
    schedule = WarmupCosine(1.0, 1, 3)
    groups = [{"lr": 123.0}, {"lr": 456.0}]
    seen = []
    for _ in range(3):
        seen.append(schedule.apply(groups))
        schedule.step()
    assert [group["lr"] for group in groups] == [seen[-1]] * 2
    with pytest.raises(ScheduleOverrun):
        schedule.step()
    with pytest.raises(ScheduleOverrun):
        schedule.apply(groups)
    assert schedule.completed == 3


@given(
    total=st.integers(min_value=1, max_value=500),
    warmup_fraction=st.floats(min_value=0, max_value=0.999),
    base_lr=st.floats(min_value=1e-8, max_value=10),
    # A subnormal floor (5e-324) times base_lr underflows to 0.0 in any float arithmetic.
    min_ratio=st.floats(min_value=0, max_value=1, allow_subnormal=False),
)
def test_no_rate_is_negative_or_above_the_peak(total, warmup_fraction, base_lr, min_ratio):
    warmup = int(total * warmup_fraction)
    schedule = WarmupCosine(base_lr, warmup, total, min_ratio)
    for _ in range(total):
        rate = schedule.lr()
        assert 0 <= rate <= base_lr * (1 + 1e-12)
        assert rate > 0 or min_ratio == 0  # only a floor of 0 reaches 0, and only at the end
        schedule.step()


def test_state_round_trip_and_refusal_of_another_schedule():
    schedule = WarmupCosine(1e-3, 2, 10)
    for _ in range(4):
        schedule.step()
    restored = WarmupCosine(1e-3, 2, 10)
    restored.load_state_dict(schedule.state_dict())
    assert restored.completed == 4 and restored.lr() == schedule.lr()
    with pytest.raises(ValueError, match="total_steps"):
        WarmupCosine(1e-3, 2, 20).load_state_dict(schedule.state_dict())
    with pytest.raises(ValueError, match="completed"):
        WarmupCosine(1e-3, 2, 10).load_state_dict({**schedule.state_dict(), "completed": 11})

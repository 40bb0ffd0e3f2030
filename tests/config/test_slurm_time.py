"""Slurm time limits in the config: the formats taken, the ones refused, and slurm.conf's form."""

from __future__ import annotations

import pytest

from gpucluster.config.slurm_time import SlurmTimeError, format_minutes, parse_minutes


@pytest.mark.parametrize(
    ("value", "minutes"),
    [
        (90, 90),
        ("90", 90),
        ("1:00:00", 60),
        ("36:30:00", 36 * 60 + 30),
        ("2-0", 2 * 1440),
        ("1-12", 1440 + 720),
        ("1-12:30", 1440 + 750),
        ("7-00:00:00", 7 * 1440),
        (" 30 ", 30),
    ],
)
def test_accepted_formats(value, minutes):
    assert parse_minutes(value, "default_time") == minutes


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("1:30", "ambiguous"),  # Slurm reads MM:SS
        ("1h", "not a time limit"),
        ("", "not a time limit"),
        ("1:00:30", "whole minutes"),
        ("1:60:00", "out of range"),
        ("1-24:00", "out of range"),
        (0, "at least one minute"),
        (-5, "at least one minute"),
        (True, "not a time limit"),
        (1.5, "not a time limit"),
        ("INFINITE", "not a time limit"),
    ],
)
def test_refused_values_name_the_field(value, fragment):
    with pytest.raises(SlurmTimeError, match=fragment) as error:
        parse_minutes(value, "max_time")
    assert str(error.value).startswith("max_time: ")


@pytest.mark.parametrize(
    ("minutes", "text"),
    [(1, "00:01:00"), (60, "01:00:00"), (1439, "23:59:00"), (1440, "1-00:00:00"), (10140, "7-01:00:00")],
)
def test_format_is_what_slurm_reads(minutes, text):
    assert format_minutes(minutes) == text
    assert parse_minutes(text, "x") == minutes


def test_format_refuses_non_positive():
    with pytest.raises(ValueError):
        format_minutes(0)

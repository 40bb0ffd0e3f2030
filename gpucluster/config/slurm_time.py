"""Slurm time limits (DefaultTime, MaxTime): parsed from the config, written for slurm.conf.

The config takes a subset of Slurm's own formats, kept to those that cannot be misread:
an integer or "MM" (minutes), "HH:MM:SS", "D-HH", "D-HH:MM" and "D-HH:MM:SS". Slurm also
reads "MM:SS" as minutes and seconds, which a user who means hours and minutes gets wrong
by a factor of 60, so it is refused here with a message that says what to write instead.
Limits are whole minutes, as slurmctld stores them.
"""

from __future__ import annotations

import re

MINUTES_PER_DAY = 24 * 60

_MINUTES = re.compile(r"^(\d+)$")
_HMS = re.compile(r"^(\d+):(\d{2}):(\d{2})$")
_DAYS = re.compile(r"^(\d+)-(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?$")
_FORMATS = '"MM", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS" or an integer number of minutes'


class SlurmTimeError(ValueError):
    """A time limit the config cannot use; the message names the field."""


def parse_minutes(value: object, field: str) -> int:
    """Minutes in `value`, a Slurm time string or an int; SlurmTimeError names `field`."""
    if isinstance(value, bool):
        raise SlurmTimeError(f"{field}: {value!r} is not a time limit; write {_FORMATS}")
    if isinstance(value, int):
        minutes = value
    elif isinstance(value, str):
        minutes = _parse_text(value.strip(), field)
    else:
        raise SlurmTimeError(f"{field}: {value!r} is not a time limit; write {_FORMATS}")
    if minutes <= 0:
        raise SlurmTimeError(f"{field}: {value!r} must be at least one minute")
    return minutes


def _parse_text(text: str, field: str) -> int:
    if match := _MINUTES.match(text):
        return int(match[1])
    if match := _HMS.match(text):
        hours, minutes, seconds = int(match[1]), int(match[2]), int(match[3])
        return _checked(field, text, 0, hours, minutes, seconds)
    if match := _DAYS.match(text):
        days, hours = int(match[1]), int(match[2])
        minutes = int(match[3] or 0)
        seconds = int(match[4] or 0)
        return _checked(field, text, days, hours, minutes, seconds)
    if re.match(r"^\d+:\d{2}$", text):
        raise SlurmTimeError(
            f"{field}: '{text}' is ambiguous (Slurm reads MM:SS, minutes and seconds); "
            f"write hours as HH:MM:SS, e.g. '{text}:00'"
        )
    raise SlurmTimeError(f"{field}: '{text}' is not a time limit; write {_FORMATS}")


def _checked(field: str, text: str, days: int, hours: int, minutes: int, seconds: int) -> int:
    if minutes > 59 or seconds > 59 or (days and hours > 23):
        raise SlurmTimeError(
            f"{field}: '{text}' has a field out of range (hours 0-23 after a day, minutes and seconds 0-59)"
        )
    if seconds:
        raise SlurmTimeError(f"{field}: '{text}' has seconds; Slurm keeps limits in whole minutes")
    return days * MINUTES_PER_DAY + hours * 60 + minutes


def format_minutes(minutes: int) -> str:
    """slurm.conf's form: "D-HH:MM:00" from a day up, else "HH:MM:00"."""
    if minutes <= 0:
        raise ValueError(f"a time limit must be positive, not {minutes} minutes")
    days, rest = divmod(minutes, MINUTES_PER_DAY)
    hours, mins = divmod(rest, 60)
    clock = f"{hours:02d}:{mins:02d}:00"
    return f"{days}-{clock}" if days else clock

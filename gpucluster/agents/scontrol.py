"""Running scontrol and reading its one-line output.

Slurm 22.05's scontrol has no --json (it answers "unrecognized option"), and the JSON
layout changes between releases anyway; `scontrol -o` prints one record per line as
`Key=value` pairs on 22.05 and 23.11 alike, so that is what the agents read.

Every command goes through a `Runner`, so tests replace the real process with a
recorder and the agents' logic never depends on a running slurmctld.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

# Answers take milliseconds; the capacity controller's run must end within its minute
# (its unit's TimeoutStartSec is 50 s), so a hung slurmctld fails the command instead.
COMMAND_TIMEOUT_SECONDS = 15

# scontrol reads and prints times in the local time zone of the host it runs on.
SLURM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"

# A key starts a record or follows whitespace. Values may hold spaces (OS=Linux 6.8.0 #1
# SMP ..., Reason=Not responding [slurm@...]) and '=' (CfgTRES=cpu=4,mem=1000M), but no
# value word both follows a space and looks like `Key=`, except in free-text reasons,
# which Slurm prints after the fields the agents read.
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_/:.]*)=")


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """What scontrol said, on whichever stream it chose."""
        return " ".join(part.strip() for part in (self.stdout, self.stderr) if part.strip())


Runner = Callable[[Sequence[str]], CommandResult]


class ScontrolError(RuntimeError):
    def __init__(self, result: CommandResult) -> None:
        super().__init__(
            f"`{' '.join(result.argv)}` failed with exit code {result.returncode}: "
            f"{result.output or 'no output'}"
        )
        self.result = result


def run_command(argv: Sequence[str]) -> CommandResult:
    """The production runner: run the command, capture both streams, never raise on exit code."""
    try:
        completed = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return CommandResult(
            tuple(argv), 124, "", f"timed out after {COMMAND_TIMEOUT_SECONDS} s; is slurmctld up?"
        )
    except FileNotFoundError:
        return CommandResult(tuple(argv), 127, "", f"{argv[0]} is not installed or not on PATH")
    return CommandResult(tuple(argv), completed.returncode, completed.stdout, completed.stderr)


def checked(result: CommandResult) -> CommandResult:
    if result.returncode != 0:
        raise ScontrolError(result)
    return result


def parse_records(text: str) -> list[dict[str, str]]:
    """One dict per `scontrol -o show ...` line; lines without fields ("No nodes in the
    system") are skipped. When a key repeats inside a line the first value wins, so a
    `State=` inside a free-text reason cannot hide the node's real state."""
    records = []
    for line in text.splitlines():
        stripped = line.strip()
        keys = list(_KEY.finditer(stripped))
        if not keys:
            continue
        record: dict[str, str] = {}
        for index, key in enumerate(keys):
            value_end = keys[index + 1].start() if index + 1 < len(keys) else len(stripped)
            record.setdefault(key.group(1), stripped[key.end() : value_end].strip())
        records.append(record)
    return records


def slurm_time(moment: datetime) -> str:
    """`moment` as scontrol reads it: local wall-clock time, whole seconds."""
    if moment.tzinfo is None:
        raise ValueError(f"{moment!r} has no time zone; pass an aware datetime")
    return moment.astimezone().strftime(SLURM_TIME_FORMAT)


def parse_slurm_time(text: str) -> datetime:
    """A time printed by scontrol (local wall-clock) as an aware datetime."""
    return datetime.strptime(text, SLURM_TIME_FORMAT).astimezone()

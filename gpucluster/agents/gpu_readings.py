"""What a GPU node's collector reads about its GPUs: nvidia-smi's CSV and the driver's Xid lines.

nvidia-smi --query-gpu prints one CSV line per GPU in the order of QUERY_FIELDS; with
`nounits` numbers come bare, and a value the GPU cannot report is `[N/A]` or
`[Not Supported]`, which the collector leaves out rather than publishing a zero.
Xid errors are in no nvidia-smi field: the driver logs `NVRM: Xid (PCI:<bus id>): <code>,
...` to the kernel log, so they are counted from the journal and matched to a GPU by
its PCI bus id.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

QUERY_FIELDS = (
    "index",
    "pci.bus_id",
    "utilization.gpu",
    "memory.used",
    "power.draw",
    "temperature.gpu",
    "ecc.errors.uncorrected.volatile.total",
)
NVIDIA_SMI = (
    "nvidia-smi",
    f"--query-gpu={','.join(QUERY_FIELDS)}",
    "--format=csv,noheader,nounits",
)
# The journal's kernel messages since the previous run's cursor (or since boot on the first).
JOURNAL = ("journalctl", "--dmesg", "--output=cat", "--no-pager", "--quiet", "--show-cursor")
_CURSOR = re.compile(r"^-- cursor: (?P<cursor>.+)$")
_PCI = r"(?P<domain>[0-9a-fA-F]+):(?P<bus>[0-9a-fA-F]+):(?P<device>[0-9a-fA-F]+)"
_XID = re.compile(rf"NVRM: Xid \(PCI:{_PCI}(?:\.[0-9a-fA-F]+)?\): (?P<code>\d+)")
_BUS_ID = re.compile(rf"^{_PCI}\.[0-9a-fA-F]+$")

BusId = tuple[int, int, int]


class ReadingError(ValueError):
    pass


@dataclass(frozen=True)
class GpuReading:
    index: int
    bus_id: BusId
    utilization: float | None
    memory_used: float | None
    power: float | None
    temperature: float | None
    ecc_uncorrected: float | None


def _number(text: str) -> float | None:
    """A bare number, or None for what nvidia-smi prints when it has none (`[N/A]`, ...)."""
    value = text.strip()
    if value.startswith("["):
        return None
    try:
        return float(value)
    except ValueError as err:
        raise ReadingError(f"nvidia-smi printed {value!r} where a number belongs") from err


def bus_id(text: str) -> BusId:
    match = _BUS_ID.match(text.strip())
    if not match:
        raise ReadingError(f"nvidia-smi printed {text.strip()!r} where a PCI bus id belongs")
    return (int(match["domain"], 16), int(match["bus"], 16), int(match["device"], 16))


def parse_gpus(csv_text: str) -> list[GpuReading]:
    readings = []
    for line in csv_text.splitlines():
        if not line.strip():
            continue
        fields = [field.strip() for field in line.split(",")]
        if len(fields) != len(QUERY_FIELDS):
            raise ReadingError(f"expected {len(QUERY_FIELDS)} fields from nvidia-smi, got {line!r}")
        index = _number(fields[0])
        if index is None:
            raise ReadingError(f"nvidia-smi printed no GPU index in {line!r}")
        utilization, memory, power, temperature, ecc = (_number(field) for field in fields[2:])
        readings.append(
            GpuReading(int(index), bus_id(fields[1]), utilization, memory, power, temperature, ecc)
        )
    return readings


@dataclass(frozen=True)
class KernelLog:
    # Xid lines by the PCI bus id they name; None when the journal could not be read, so
    # the count is unknown and left out rather than published as a zero.
    xids: Counter[BusId] | None
    # Where the next run continues; None when the journal printed none (nothing new).
    cursor: str | None


def parse_journal(text: str) -> KernelLog:
    xids: Counter[BusId] = Counter()
    cursor = None
    for line in text.splitlines():
        found = _CURSOR.match(line)
        if found:
            cursor = found["cursor"]
            continue
        xid = _XID.search(line)
        if xid:
            xids[(int(xid["domain"], 16), int(xid["bus"], 16), int(xid["device"], 16))] += 1
    return KernelLog(xids, cursor)


def journal_command(cursor: str | None, since: float | None = None) -> list[str]:
    """After the previous run's cursor; else since a time (a cursor the journal no longer
    holds, after a rotation); else the whole boot (the first run)."""
    if cursor:
        return [*JOURNAL, f"--after-cursor={cursor}"]
    if since is not None:
        return [*JOURNAL, f"--since=@{int(since)}"]
    return [*JOURNAL, "--boot"]

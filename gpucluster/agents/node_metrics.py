"""GPU node metrics, every minute from a systemd timer on each compute node.

Per GPU (nvidia-smi): utilization, memory used, power, temperature, uncorrectable ECC
errors, and the Xid errors the driver logged since the previous run (the journal).
Per EFA device (hw_counters): transmit, receive and RDMA read/write rates,
retransmitted packets and errors over the interval. Written as EMF lines that the
node's CloudWatch agent ships (emf). Names, units and dimensions: metric_names.

Compute nodes have no AWS SDK for the system python3, so this imports only the
standard library and other agents. The previous run's EFA counters and journal cursor
live under /run: a reboot starts afresh rather than comparing across boots.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from gpucluster.agents import efa_readings, emf, gpu_readings
from gpucluster.agents import metric_names as m
from gpucluster.agents.cluster_names import CLUSTER_NAME

LOG = logging.getLogger("node-metrics")
# Under the unit's RuntimeDirectory= (templates/systemd/compute), which survives between runs.
STATE_DIR_NAME = "gpucluster-metrics"
STATE_FILE = f"/run/{STATE_DIR_NAME}/node-metrics.json"
COMMAND_TIMEOUT_SECONDS = 20

# argv -> (exit code, stdout, stderr); tests replace the real processes.
Command = Callable[[Sequence[str]], tuple[int, str, str]]


def run_command(argv: Sequence[str]) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {COMMAND_TIMEOUT_SECONDS} s"
    except FileNotFoundError:
        return 127, "", f"{argv[0]} is not installed or not on PATH"
    return done.returncode, done.stdout, done.stderr


@dataclass
class State:
    """What the next run compares with."""

    time: float | None = None
    efa: efa_readings.Counters = field(default_factory=dict)
    cursor: str | None = None

    @classmethod
    def load(cls, path: Path) -> State:
        try:
            data = json.loads(path.read_text())
            return cls(float(data["time"]), dict(data["efa"]), data.get("cursor"))
        except (OSError, ValueError, KeyError, TypeError):
            return cls()

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"time": self.time, "efa": self.efa, "cursor": self.cursor}))
        temporary.replace(path)


def gpu_records(
    namespace: str,
    node: str,
    gpus: Sequence[gpu_readings.GpuReading],
    log: gpu_readings.KernelLog,
    when: datetime,
) -> list[str]:
    lines = []
    for gpu in gpus:
        values = [
            (m.GPU_UTILIZATION, gpu.utilization),
            (m.GPU_MEMORY_USED, gpu.memory_used),
            (m.GPU_POWER, gpu.power),
            (m.GPU_TEMPERATURE, gpu.temperature),
            (m.GPU_ECC_ERRORS, gpu.ecc_uncorrected),
            (m.GPU_XID_ERRORS, None if log.xids is None else float(log.xids.get(gpu.bus_id, 0))),
        ]
        known = [(metric, value) for metric, value in values if value is not None]
        lines.append(emf.record(namespace, {m.NODE: node, m.GPU: str(gpu.index)}, known, when))
    return lines


def efa_records(
    namespace: str, node: str, previous: State, current: efa_readings.Counters, now: float, when: datetime
) -> list[str]:
    if previous.time is None or now <= previous.time:
        return []
    seconds = now - previous.time
    rates: dict[m.Metric, tuple[str, ...]] = {
        m.EFA_TX_BYTES: ("tx_bytes",),
        m.EFA_RX_BYTES: ("rx_bytes",),
        m.EFA_RDMA_READ_BYTES: ("rdma_read_bytes",),
        m.EFA_RDMA_WRITE_BYTES: ("rdma_write_bytes",),
    }
    counts = {m.EFA_RETRANSMITS: efa_readings.RETRANSMIT_COUNTERS, m.EFA_ERRORS: efa_readings.ERROR_COUNTERS}
    lines = []
    for device, counters in sorted(current.items()):
        before = previous.efa.get(device)
        if before is None or efa_readings.reset(before, counters):
            continue
        values: list[tuple[m.Metric, float]] = []
        for metric, names in rates.items():
            grew = efa_readings.deltas(before, counters, names)
            if grew is not None:
                values.append((metric, round(grew / seconds, 1)))
        for metric, names in counts.items():
            grew = efa_readings.deltas(before, counters, names)
            if grew is not None:
                values.append((metric, float(grew)))
        if values:
            lines.append(emf.record(namespace, {m.NODE: node, m.DEVICE: device}, values, when))
    return lines


def read_kernel_log(command: Command, previous: State) -> gpu_readings.KernelLog:
    """The Xid lines since the previous run, and the cursor the next run continues from."""
    code, out, err = command(gpu_readings.journal_command(previous.cursor, previous.time))
    if code == 0:
        found = gpu_readings.parse_journal(out)
        # No new entry prints no cursor: the old one still marks where to go on.
        return gpu_readings.KernelLog(found.xids, found.cursor or previous.cursor)
    if previous.cursor:
        # The cursor's entry was rotated away: go on from the previous run's time instead.
        LOG.warning("journal cursor not usable (%s), reading since the previous run", err.strip())
        code, out, err = command(gpu_readings.journal_command(None, previous.time))
        if code == 0:
            return gpu_readings.parse_journal(out)
    LOG.warning("cannot read the kernel log (exit %d), no Xid counts this minute: %s", code, err.strip())
    return gpu_readings.KernelLog(None, None)


def collect(
    cluster: str,
    node: str,
    command: Command,
    state_file: Path,
    sysfs: str | Path,
    when: datetime,
) -> list[str]:
    """This minute's EMF lines; the state for the next run is saved as a side effect."""
    previous = State.load(state_file)
    lines: list[str] = []
    namespace = m.namespace(cluster)
    code, out, err = command(gpu_readings.NVIDIA_SMI)
    if code != 0:
        # 127: a group without GPUs has no nvidia-smi; its EFA metrics still go out.
        (LOG.info if code == 127 else LOG.error)(
            "nvidia-smi failed (exit %d), no GPU metrics this minute: %s", code, err.strip()
        )
        gpus = []
    else:
        gpus = gpu_readings.parse_gpus(out)
    kernel = read_kernel_log(command, previous)
    lines += gpu_records(namespace, node, gpus, kernel, when)
    counters = efa_readings.read_counters(sysfs)
    now = when.timestamp()
    lines += efa_records(namespace, node, previous, counters, now, when)
    State(now, counters, kernel.cursor).save(state_file)
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", required=True, help="the cluster's name (the metrics' namespace)")
    parser.add_argument("--output", default=emf.METRICS_LOG_DIR, help="directory the agent ships")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(levelname)s %(message)s")
    if not re.fullmatch(CLUSTER_NAME, args.cluster):
        LOG.error("--cluster %r is not a gpucluster cluster name", args.cluster)
        return 2
    node = socket.gethostname().split(".")[0]
    when = datetime.now(UTC)
    try:
        lines = collect(args.cluster, node, run_command, Path(STATE_FILE), efa_readings.SYSFS_ROOT, when)
    except (gpu_readings.ReadingError, OSError, ValueError) as err:
        LOG.error("no metrics this minute: %s", err)
        return 1
    if lines:
        try:
            emf.append(lines, when, args.output)
        except OSError as err:
            LOG.error("cannot write the metric records to %s: %s", args.output, err)
            return 1
    LOG.info("%d metric records for node %s", len(lines), node)
    return 0


if __name__ == "__main__":
    sys.exit(main())

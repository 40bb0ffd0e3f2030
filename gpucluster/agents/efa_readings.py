"""What a GPU node's collector reads about its EFA devices: the driver's hw_counters.

The EFA kernel driver exposes cumulative port counters as one file each under
/sys/class/infiniband/<device>/ports/<port>/hw_counters/ (names from efa_verbs.c's
EFA_DEFINE_PORT_STATS: tx_bytes, rx_bytes, rx_drops, rdma_read_bytes, rdma_write_bytes,
the work-request errors, and since the 2024 driver the retransmit and remote-connection
counters). A counter an older driver lacks is simply not summed. The collector turns
two readings into rates; a device whose counters went backwards (driver reloaded) gives
none that interval.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

SYSFS_ROOT = "/sys/class/infiniband"

BYTE_COUNTERS = ("tx_bytes", "rx_bytes", "rdma_read_bytes", "rdma_write_bytes")
RETRANSMIT_COUNTERS = ("retrans_pkts",)
ERROR_COUNTERS = (
    "rx_drops",
    "rdma_read_wr_err",
    "rdma_write_wr_err",
    "retrans_timeout_events",
    "unresponsive_remote_events",
    "impaired_remote_conn_events",
)
COUNTERS = (*BYTE_COUNTERS, *RETRANSMIT_COUNTERS, *ERROR_COUNTERS)

Counters = dict[str, dict[str, int]]


def read_counters(root: str | Path = SYSFS_ROOT) -> Counters:
    """Device -> counter -> value, summed over the device's ports. Devices without
    hw_counters (no EFA driver) are left out."""
    found: Counters = {}
    base = Path(root)
    if not base.is_dir():
        return found
    for device in sorted(base.iterdir()):
        values: dict[str, int] = {}
        for counters in sorted(device.glob("ports/*/hw_counters")):
            for name in COUNTERS:
                path = counters / name
                if path.is_file():
                    values[name] = values.get(name, 0) + int(path.read_text().strip())
        if values:
            found[device.name] = values
    return found


def reset(previous: Mapping[str, int], current: Mapping[str, int]) -> bool:
    """Whether any counter went backwards: the driver was reloaded, so no rate this time."""
    return any(current[name] < value for name, value in previous.items() if name in current)


def deltas(previous: Mapping[str, int], current: Mapping[str, int], names: tuple[str, ...]) -> int | None:
    """How much `names` grew together, or None when the device has none of them."""
    present = [name for name in names if name in current and name in previous]
    if not present:
        return None
    return sum(current[name] - previous[name] for name in present)

"""The scale target: 8 compute groups x 128 p5.48xlarge = 1,024 GPU nodes."""

from __future__ import annotations

LARGE_GROUPS = 8
LARGE_NODES_PER_GROUP = 128


def large_config(default: dict) -> dict:
    """The default config with 8 groups of 128 nodes. Capacity Blocks stop at 64
    instances, so the groups alternate on-demand and ODCR capacity."""
    group = default["compute_groups"][0]
    data = dict(default)
    data["compute_groups"] = [
        {
            "name": f"gpu{index}",
            "instance_type": group["instance_type"],
            "count": LARGE_NODES_PER_GROUP,
            "capacity": (
                {"type": "on-demand"}
                if index % 2 == 0
                else {"type": "odcr", "reservation_id": f"cr-{0x0A1B2C3D4E5F60000 + index:017x}"}
            ),
        }
        for index in range(LARGE_GROUPS)
    ]
    return data

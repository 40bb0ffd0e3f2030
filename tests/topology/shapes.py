"""DescribeInstanceTopology answers in the documented response format (EC2 API Reference,
DescribeInstanceTopology; EC2 User Guide, "Examples for Amazon EC2 instance topology"):
`Instances[].{InstanceId, InstanceType, GroupName, NetworkNodes, AvailabilityZone, ZoneId,
CapacityBlockId}`, 3 network nodes for p5, p5en and trn2 (4 for p6-b200), top layer first.
They are built from that format, not recorded from a live account: no instance's real
network node ids are public."""

from __future__ import annotations

from typing import Any


def instance(
    number: int,
    instance_type: str,
    nodes: list[str],
    *,
    group: str | None = None,
    block: str | None = None,
) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "InstanceId": f"i-0a1b2c3d4e5f{number:05d}",
        "InstanceType": instance_type,
        "NetworkNodes": nodes,
        "AvailabilityZone": "us-east-2a",
        "ZoneId": "use2-az1",
    }
    if group is not None:
        entry["GroupName"] = group
    if block is not None:
        entry["CapacityBlockId"] = block
    return entry


# A 4-node p5 Capacity Block: two leaves under one spine (the block has no placement group).
P5 = {
    "Instances": [
        instance(
            1,
            "p5.48xlarge",
            ["nn-1f2e3d4c5b6a7980a", "nn-2a3b4c5d6e7f8091a", "nn-3a0000000000000a1"],
            block="cr-0a1b2c3d4e5f67890",
        ),
        instance(
            2,
            "p5.48xlarge",
            ["nn-1f2e3d4c5b6a7980a", "nn-2a3b4c5d6e7f8091a", "nn-3a0000000000000a1"],
            block="cr-0a1b2c3d4e5f67890",
        ),
        instance(
            3,
            "p5.48xlarge",
            ["nn-1f2e3d4c5b6a7980a", "nn-2a3b4c5d6e7f8091a", "nn-3a0000000000000b2"],
            block="cr-0a1b2c3d4e5f67890",
        ),
        instance(
            4,
            "p5.48xlarge",
            ["nn-1f2e3d4c5b6a7980a", "nn-2a3b4c5d6e7f8091a", "nn-3a0000000000000b2"],
            block="cr-0a1b2c3d4e5f67890",
        ),
    ]
}
# p5en in a cluster placement group, across two spines under one top node.
P5EN = {
    "Instances": [
        instance(11, "p5en.48xlarge", ["nn-top", "nn-spine-a", "nn-leaf-a1"], group="pg-train"),
        instance(12, "p5en.48xlarge", ["nn-top", "nn-spine-a", "nn-leaf-a2"], group="pg-train"),
        instance(13, "p5en.48xlarge", ["nn-top", "nn-spine-b", "nn-leaf-b1"], group="pg-train"),
    ],
    "NextToken": None,
}
# trn2 across two top-layer nodes: no common network node at all.
TRN2 = {
    "Instances": [
        instance(21, "trn2.48xlarge", ["nn-t1", "nn-t1-s1", "nn-t1-s1-l1"]),
        instance(22, "trn2.48xlarge", ["nn-t1", "nn-t1-s1", "nn-t1-s1-l1"]),
        instance(23, "trn2.48xlarge", ["nn-t2", "nn-t2-s1", "nn-t2-s1-l1"]),
    ]
}

"""Regenerate gpucluster/data/instance_catalog.json.

Two sources, same output shape (DescribeInstanceTypes entries):

    python scripts/build_catalog.py --source moto      # offline, moto's bundled copy
    python scripts/build_catalog.py --source aws --region us-east-2   # live account

DescribeInstanceTypes does not say which network cards carry EFA, so each
NetworkCards[] entry gets an `InterfaceTypes` list derived from
`EfaInfo.MaximumEfaInterfaces`: when a type has as many EFA interfaces as
cards, every card takes EFA; when it has fewer, the EFA cards are the last
ones and card 0 is ENA-only (p6-b300: 17 cards, 16 EFA, card 0 is the
ENA-only primary card, as in the EC2 user guide). Single-card types with one
EFA put it on card 0. `CapacityBlockSupported` is added from the EC2 list of
Capacity Block instance types, and `NvSwitch` (whether the GPUs are joined by
NVSwitch, so the node must run NVIDIA Fabric Manager) from NVSWITCH_FAMILIES.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

CATALOG_TYPES = (
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.4xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "p6-b300.48xlarge",
    "g5.8xlarge",
    "g5.12xlarge",
    "g5.16xlarge",
    "g5.24xlarge",
    "g5.48xlarge",
    "g6.8xlarge",
    "g6.12xlarge",
    "g6.16xlarge",
    "g6.24xlarge",
    "g6.48xlarge",
    "g6e.8xlarge",
    "g6e.12xlarge",
    "g6e.16xlarge",
    "g6e.24xlarge",
    "g6e.48xlarge",
)

CAPACITY_BLOCK_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300")

# HGX baseboards whose 8 GPUs meet in NVSwitch chips (A100: p4d/p4de, H100/H200: p5/p5e/
# p5en, B200/B300: p6): CUDA refuses work on them until Fabric Manager has set the fabric up.
# AWS ParallelCluster's cookbook starts it for the NVSwitch PCI ids of P4, P5 and P6 (B200)
# (aws-parallelcluster-cookbook PR 2987). The g families are PCIe GPUs without NVSwitch.
NVSWITCH_FAMILIES = ("p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300")


def has_nvswitch(entry: dict[str, Any]) -> bool:
    """True for the full 8-GPU HGX types; a one-GPU slice (p5.4xlarge) has no NVLink peer."""
    gpus = sum(g["Count"] for g in entry["GpuInfo"]["Gpus"])
    return entry["InstanceType"].split(".")[0] in NVSWITCH_FAMILIES and gpus > 1


KEPT_KEYS = (
    "InstanceType",
    "CurrentGeneration",
    "ProcessorInfo",
    "VCpuInfo",
    "MemoryInfo",
    "GpuInfo",
    "InstanceStorageInfo",
    "NetworkInfo",
)
KEPT_NETWORK_KEYS = (
    "EfaSupported",
    "EfaInfo",
    "EnaSupport",
    "MaximumNetworkCards",
    "MaximumNetworkInterfaces",
    "DefaultNetworkCardIndex",
    "NetworkPerformance",
    "NetworkCards",
)


def _from_moto() -> dict[str, dict[str, Any]]:
    import moto

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path) as fh:
        return json.load(fh)


def _from_aws(region: str) -> dict[str, dict[str, Any]]:
    import boto3

    ec2 = boto3.client("ec2", region_name=region)
    found: dict[str, dict[str, Any]] = {}
    for page in ec2.get_paginator("describe_instance_types").paginate(InstanceTypes=list(CATALOG_TYPES)):
        for item in page["InstanceTypes"]:
            found[item["InstanceType"]] = item
    return found


def annotate_interface_types(network: dict[str, Any]) -> None:
    cards = sorted(network["NetworkCards"], key=lambda c: c["NetworkCardIndex"])
    max_efa = network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0)
    efa_cards = {c["NetworkCardIndex"] for c in cards[len(cards) - min(max_efa, len(cards)) :]}
    if max_efa == 0:
        efa_cards = set()
    for card in cards:
        card["InterfaceTypes"] = (
            ["interface", "efa", "efa-only"] if card["NetworkCardIndex"] in efa_cards else ["interface"]
        )
    network["NetworkCards"] = cards


def slim(entry: dict[str, Any]) -> dict[str, Any]:
    out = {key: entry[key] for key in KEPT_KEYS if key in entry}
    out["NetworkInfo"] = {
        key: entry["NetworkInfo"][key] for key in KEPT_NETWORK_KEYS if key in entry["NetworkInfo"]
    }
    annotate_interface_types(out["NetworkInfo"])
    out["CapacityBlockSupported"] = entry["InstanceType"].split(".")[0] in CAPACITY_BLOCK_FAMILIES
    out["NvSwitch"] = has_nvswitch(entry)
    return out


def build(source: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    missing = [name for name in CATALOG_TYPES if name not in source]
    if missing:
        raise SystemExit(f"source lacks instance types: {', '.join(missing)}")
    return [slim(source[name]) for name in CATALOG_TYPES]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("moto", "aws"), default="moto")
    parser.add_argument("--region", default="us-east-2")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "gpucluster" / "data" / "instance_catalog.json",
    )
    args = parser.parse_args()
    source = _from_moto() if args.source == "moto" else _from_aws(args.region)
    entries = build(source)
    args.out.write_text(json.dumps(entries, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(entries)} instance types to {args.out}")


if __name__ == "__main__":
    main()

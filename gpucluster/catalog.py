"""Offline facts about the GPU instance types a cluster may use.

The data file is DescribeInstanceTypes output for each supported type, slimmed
and annotated by scripts/build_catalog.py; nothing here calls AWS.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gpucluster.cpu_topology import VERIFIED, GpuSockets

InterfaceType = Literal["interface", "efa", "efa-only"]


class NetworkCard(BaseModel):
    model_config = ConfigDict(frozen=True)

    index: int
    max_interfaces: int
    interface_types: tuple[InterfaceType, ...]
    peak_gbps: float

    @property
    def supports_efa(self) -> bool:
        return "efa" in self.interface_types or "efa-only" in self.interface_types


class InstanceType(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    vcpus: int
    # Physical cores (DefaultCores): what slurmd counts, and the bound on any gres.conf Cores=.
    cores: int
    memory_mib: int
    gpu_count: int
    gpu_model: str
    gpu_memory_mib: int
    nvme_disks: int
    nvme_total_gb: int
    max_efa_interfaces: int
    network_cards: tuple[NetworkCard, ...]
    capacity_block_supported: bool
    # GPUs joined by NVSwitch: the node must run NVIDIA Fabric Manager before CUDA works.
    nvswitch: bool
    # Sockets, cores, threads and each GPU's socket, where a public source shows them
    # (cpu_topology.VERIFIED); None: nodes register no layout (NVML binds GPUs either way).
    gpu_sockets: GpuSockets | None = None

    @property
    def family(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def efa_supported(self) -> bool:
        return self.max_efa_interfaces > 0

    @property
    def slurm_gpu_type(self) -> str:
        """GRES type name: lower-case GPU model, e.g. ``h100``.

        Nodes register it (`Gres=gpu:<type>:<N>`) and gres.conf's AutoDetect=nvml finds the
        GPUs: Slurm names a detected GPU by its NVML name, lower-cased with spaces as
        underscores ("NVIDIA H200" -> nvidia_h200), and renames it to the registered type
        that is a substring of that name (_normalize_sys_gres_types in gres_gpu.c, 25.11.7;
        tests/fixtures/slurm holds the pinned slurmd doing so on an H200 host).
        """
        return self.gpu_model.lower()


def _checked_topology(entry: dict[str, Any], gpu_count: int) -> GpuSockets | None:
    """The verified topology of the entry's type, which must agree with what EC2 reports."""
    name = entry["InstanceType"]
    topology = VERIFIED.get(name)
    if topology is None:
        return None
    vcpus = entry["VCpuInfo"]
    reported = (vcpus["DefaultCores"], vcpus["DefaultThreadsPerCore"], gpu_count)
    table = (topology.layout.cores, topology.layout.threads_per_core, len(topology.gpu_socket))
    if reported != table:
        raise ValueError(
            f"cpu_topology.VERIFIED[{name}] has (cores, threads per core, GPUs) {table}, "
            f"the catalog {reported}"
        )
    return topology


def _parse(entry: dict[str, Any]) -> InstanceType:
    gpus = entry["GpuInfo"]["Gpus"][0]
    storage = entry.get("InstanceStorageInfo", {})
    network = entry["NetworkInfo"]
    gpu_count = sum(g["Count"] for g in entry["GpuInfo"]["Gpus"])
    return InstanceType(
        name=entry["InstanceType"],
        vcpus=entry["VCpuInfo"]["DefaultVCpus"],
        cores=entry["VCpuInfo"]["DefaultCores"],
        memory_mib=entry["MemoryInfo"]["SizeInMiB"],
        gpu_count=gpu_count,
        gpu_model=gpus["Name"],
        gpu_memory_mib=gpus["MemoryInfo"]["SizeInMiB"],
        nvme_disks=sum(d["Count"] for d in storage.get("Disks", [])),
        nvme_total_gb=storage.get("TotalSizeInGB", 0),
        max_efa_interfaces=network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0),
        network_cards=tuple(
            NetworkCard(
                index=card["NetworkCardIndex"],
                max_interfaces=card["MaximumNetworkInterfaces"],
                interface_types=tuple(card["InterfaceTypes"]),
                peak_gbps=card.get("PeakBandwidthInGbps", 0.0),
            )
            for card in sorted(network["NetworkCards"], key=lambda c: c["NetworkCardIndex"])
        ),
        capacity_block_supported=entry["CapacityBlockSupported"],
        nvswitch=entry["NvSwitch"],
        gpu_sockets=_checked_topology(entry, gpu_count),
    )


class Catalog:
    """Lookup of instance types by name."""

    def __init__(self, types: dict[str, InstanceType]) -> None:
        self._types = types

    def __contains__(self, name: object) -> bool:
        return name in self._types

    def get(self, name: str) -> InstanceType:
        try:
            return self._types[name]
        except KeyError:
            raise KeyError(f"{name} is not in the instance catalog") from None

    def names(self) -> list[str]:
        return list(self._types)


@cache
def load_catalog() -> Catalog:
    raw = json.loads(resources.files("gpucluster").joinpath("data/instance_catalog.json").read_text())
    return Catalog({entry["InstanceType"]: _parse(entry) for entry in raw})

"""The EC2 On-Demand vCPU quotas a deploy needs, per quota, against Service Quotas.

What counts (EC2 User Guide, "On-Demand Instance quotas",
https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-on-demand-instances.html):
each quota caps the vCPUs of one group of instance families, and "Capacity Reservations
count toward your On-Demand Instance quotas, even if they are unused". So the head,
the login nodes (on EKS the system node group instead), on-demand groups and ODCR groups
all count. A Capacity Block is bought
up front under limits of its own (64 instances per block, 256 across blocks: "Find and
purchase Capacity Blocks"); its nodes are not counted here. EFA has no quota of its
own: an EFA-capable type (p5, p5en, p6) counts under its family's quota.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import aws_call
from gpucluster.catalog import load_catalog
from gpucluster.config import CapacityBlockCapacity, ClusterConfig
from gpucluster.preflight.result import Result, failed, passed
from gpucluster.preflight.service_nodes import service_nodes


@dataclass(frozen=True)
class Quota:
    code: str
    name: str


# Service Quotas codes (service code ec2) from the user guide's table above.
QUOTAS = {
    "P": Quota("L-417A185B", "Running On-Demand P instances"),
    "G": Quota("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "Standard": Quota("L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances"),
    "Inf": Quota("L-1945791B", "Running On-Demand Inf instances"),
    "Trn": Quota("L-2C3B7624", "Running On-Demand Trn instances"),
    "DL": Quota("L-6E869C2A", "Running On-Demand DL instances"),
    "F": Quota("L-74FC7D96", "Running On-Demand F instances"),
    "HPC": Quota("L-F7808C92", "Running On-Demand HPC instances"),
    "X": Quota("L-7295265B", "Running On-Demand X instances"),
    "High Memory": Quota("L-43DA4232", "Running On-Demand High Memory instances"),
}
# Longest prefixes first: "trn" and "inf" before a one-letter family.
_PREFIXES = (
    ("trn", "Trn"),
    ("inf", "Inf"),
    ("hpc", "HPC"),
    ("dl", "DL"),
    ("vt", "G"),
    ("u", "High Memory"),
    ("p", "P"),
    ("g", "G"),
    ("f", "F"),
    ("x", "X"),
)


def family(instance_type: str) -> str | None:
    """The quota family of an instance type (None: not an On-Demand vCPU quota we know)."""
    letters = re.match(r"^[a-z]+", instance_type)
    prefix = letters.group(0) if letters else ""
    for start, name in _PREFIXES:
        if prefix.startswith(start):
            return name
    if prefix[:1] and prefix[:1] in "acdhimrtz":
        return "Standard"
    return None


@dataclass(frozen=True)
class Demand:
    who: str  # "head", "login", "system" (EKS) or the compute group's name
    instance_type: str
    count: int
    vcpus: int  # per instance

    @property
    def total(self) -> int:
        return self.count * self.vcpus

    def __str__(self) -> str:
        return f"{self.who} {self.count} x {self.instance_type} = {self.total}"


def _counted(cfg: ClusterConfig) -> list[tuple[str, str, int]]:
    """(who, instance type, count) of every node that counts against an On-Demand quota."""
    nodes = service_nodes(cfg)
    nodes += [
        (g.name, g.instance_type, g.count)
        for g in cfg.compute_groups
        if not isinstance(g.capacity, CapacityBlockCapacity)
    ]
    return nodes


def _vcpus(clients: Clients, cfg: ClusterConfig, types: set[str]) -> dict[str, int]:
    """vCPUs per type: the GPU catalog's, DescribeInstanceTypes for the rest (service_nodes)."""
    catalog = load_catalog()
    found = {name: catalog.get(name).vcpus for name in types if name in catalog}
    rest = sorted(types - set(found))
    if rest:
        paginator = clients.get("ec2", cfg.region).get_paginator("describe_instance_types")
        with aws_call("ec2:DescribeInstanceTypes", cfg.region):
            for page in paginator.paginate(InstanceTypes=rest):
                for raw in page.get("InstanceTypes", []):
                    found[raw["InstanceType"]] = int(raw["VCpuInfo"]["DefaultVCpus"])
    return found


def _value(clients: Clients, region: str, quota: Quota) -> float:
    """The applied quota value; the AWS default when the account never had one applied."""
    from botocore.exceptions import ClientError

    service = clients.get("service-quotas", region)
    with aws_call("servicequotas:GetServiceQuota", region):
        try:
            answer: dict[str, Any] = service.get_service_quota(ServiceCode="ec2", QuotaCode=quota.code)
        except ClientError as exc:
            # Service Quotas answers NoSuchResourceException for a quota with no applied value.
            if exc.response.get("Error", {}).get("Code") != "NoSuchResourceException":
                raise
            answer = service.get_aws_default_service_quota(ServiceCode="ec2", QuotaCode=quota.code)
    return float(answer["Quota"]["Value"])


def quotas(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    nodes = _counted(cfg)
    vcpus = _vcpus(clients, cfg, {instance_type for _, instance_type, _ in nodes})
    demands: dict[str, list[Demand]] = defaultdict(list)
    results: list[Result] = []
    for who, instance_type, count in nodes:
        # DescribeInstanceTypes refuses an unknown type (InvalidInstanceType): every type is here.
        kind = family(instance_type)
        if kind is None:
            results.append(
                failed(
                    f"quota {who}",
                    f"no On-Demand vCPU quota is known for {instance_type}",
                    f"check its quota in Service Quotas (ec2, {cfg.region}) by hand",
                )
            )
            continue
        demands[kind].append(Demand(who, instance_type, count, vcpus[instance_type]))
    for group in cfg.compute_groups:
        if isinstance(group.capacity, CapacityBlockCapacity):
            kind = family(group.instance_type)
            counted = f" against {QUOTAS[kind].name}" if kind else ""
            results.append(
                passed(
                    f"quota {group.name}",
                    f"{group.count} x {group.instance_type} in Capacity Block "
                    f"{group.capacity.reservation_id}: not counted{counted} (bought up front)",
                )
            )
    for kind, wanted in sorted(demands.items()):
        quota = QUOTAS[kind]
        value = _value(clients, cfg.region, quota)
        needed = sum(d.total for d in wanted)
        detail = (
            f"{quota.name} ({quota.code}): {value:.0f} vCPUs; needed {needed} ({'; '.join(map(str, wanted))})"
        )
        if value >= needed:
            results.append(passed(f"quota {kind}", detail))
        else:
            results.append(
                failed(
                    f"quota {kind}",
                    detail,
                    f"request an increase in Service Quotas: {quota.name} ({quota.code}) in "
                    f"{cfg.region}, to at least {needed} vCPUs",
                )
            )
    return results

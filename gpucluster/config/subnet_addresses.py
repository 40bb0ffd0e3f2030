"""How many private IPv4 addresses of the node subnet a cluster takes, and which subnet
holds them: checked by `validate` for a created VPC and by `preflight` for an existing one.

What takes an address (every node, file system and mount target sits in the one subnet):
- each node's interfaces that carry an IP: the primary ENA interface and any `efa` (EFA
  with ENA) one. `efa-only` interfaces have none: "the EFA device is not assigned an IP
  address because it uses the Scalable Reliable Datagram (SRD) protocol, which operates
  over MAC addresses" (AWS What's New, 2024-10-28, "Amazon EC2 announces EFA updates for
  scalability with AI/ML applications"). The layout is gpucluster.efa's, per type.
- the head node twice: replacing an instance, CloudFormation creates the new one before
  it deletes the old (FACTS.md, "CloudFormation behaviours that bite").
- the EFS mount target: one address in its subnet.
- FSx for Lustre: one network interface per file server and metadata server. AWS does not
  publish how many servers a size gets, only that FSx "adds new network file servers" as
  storage grows ("Managing storage capacity"); this counts one per 1200 GiB, the smallest
  unit any deployment type is sold in, plus one per 12000 metadata IOPS (the step of the
  user-provisioned values, fsx_rules.METADATA_IOPS), at least one: an upper estimate.
No interface endpoint: the VPC's only endpoint is the S3 gateway, which takes no address.
On EKS (orchestrator eks) there is no head and no login instance; the system node group's
nodes take addresses instead, and the VPC CNI gives each pod an address of this subnet: per
GPU node its default warm pool (two interfaces of network card 0), per system node every
card-0 interface full (gpucluster/eks_nodes.py). The control plane's interfaces sit in its
own two subnets.
AWS reserves the first four and the last address of every subnet (VPC user guide,
"Subnet CIDR blocks"); DescribeSubnets' AvailableIpAddressCount already leaves them out.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from math import ceil
from typing import TYPE_CHECKING

from gpucluster.config.orchestrator import EKS
from gpucluster.efa import efa_interface_layout
from gpucluster.eks_nodes import (
    CNI_INTERFACES_PER_GPU_NODE,
    SYSTEM_NODE_COUNT,
    cni_addresses,
    system_node_addresses,
)

if TYPE_CHECKING:
    from gpucluster.catalog import InstanceType
    from gpucluster.config.cluster import ClusterConfig
    from gpucluster.config.nodes import ComputeGroupConfig
    from gpucluster.config.storage import FsxLustreConfig

AWS_RESERVED = 5
FSX_GIB_PER_SERVER = 1200
FSX_IOPS_PER_METADATA_SERVER = 12000
# The largest network a created VPC may have (network.cidr's bound): its node subnet is
# the largest a created cluster can get.
LARGEST_VPC_PREFIX = 16


@dataclass(frozen=True)
class AddressNeed:
    what: str
    count: int
    how: str = ""


@dataclass(frozen=True)
class AddressNeeds:
    """Addresses by what takes them, in the order they are reported."""

    parts: tuple[AddressNeed, ...]

    @property
    def total(self) -> int:
        return sum(part.count for part in self.parts)

    def breakdown(self) -> str:
        """`head 2 (...), login 1, group gpu 64 (64 nodes x 1), ...`: what takes any."""
        return ", ".join(
            f"{p.what} {p.count}" + (f" ({p.how})" if p.how else "") for p in self.parts if p.count
        )


def node_addresses(instance: InstanceType, efa: bool) -> int:
    """Addresses one node takes: the interfaces of its layout that carry an IP (without EFA,
    the primary interface alone)."""
    if not efa:
        return 1
    return sum(1 for slot in efa_interface_layout(instance) if slot.interface_type != "efa-only")


def fsx_addresses(fsx: FsxLustreConfig) -> int:
    metadata = max(1, ceil((fsx.metadata_iops or 0) / FSX_IOPS_PER_METADATA_SERVER))
    return ceil(fsx.storage_gib / FSX_GIB_PER_SERVER) + metadata


def _group_need(group: ComputeGroupConfig) -> AddressNeed:
    each = node_addresses(group.instance, group.efa)
    return AddressNeed(f"group {group.name}", group.count * each, f"{group.count} nodes x {each}")


def _eks_group_need(group: ComputeGroupConfig) -> AddressNeed:
    instance = group.instance
    card0 = next(card.max_interfaces for card in instance.network_cards if card.index == 0)
    pods = cni_addresses(instance.name, card0, CNI_INTERFACES_PER_GPU_NODE)
    each = node_addresses(instance, group.efa) + pods
    how = f"{group.count} nodes x {each}, {pods} of them the VPC CNI's for pods"
    return AddressNeed(f"group {group.name}", group.count * each, how)


def _node_needs(cfg: ClusterConfig) -> tuple[AddressNeed, ...]:
    if cfg.orchestrator == EKS:
        each = system_node_addresses()
        return (
            AddressNeed("system", SYSTEM_NODE_COUNT * each, f"{SYSTEM_NODE_COUNT} nodes x {each} with pods"),
            *(_eks_group_need(g) for g in cfg.compute_groups),
        )
    return (
        AddressNeed("head", 2, "the new one starts before the old one stops"),
        AddressNeed("login", cfg.login_nodes.count),
        *(_group_need(g) for g in cfg.compute_groups),
    )


def addresses_needed(cfg: ClusterConfig) -> AddressNeeds:
    fsx = cfg.storage.fsx_lustre
    return AddressNeeds(
        (
            *_node_needs(cfg),
            AddressNeed("FSx", fsx_addresses(fsx) if fsx else 0, "estimate"),
            AddressNeed("EFS mount target", 1),
        )
    )


def usable(subnet: ipaddress.IPv4Network) -> int:
    return subnet.num_addresses - AWS_RESERVED


def prefix_for(needed: int) -> int:
    """The longest subnet prefix with `needed` usable addresses."""
    prefix = 28  # the smallest subnet AWS allows
    while prefix > 0 and usable(ipaddress.IPv4Network(("0.0.0.0", prefix))) < needed:
        prefix -= 1
    return prefix


def created_subnet_problem(cfg: ClusterConfig) -> str | None:
    """What is wrong when the node subnet of the VPC the stack creates cannot hold the
    cluster, with a network.cidr that can; None when it can (or the VPC exists already:
    preflight reads that subnet's free addresses)."""
    from gpucluster.config.network import subnet_cidrs

    cidr = cfg.network.cidr
    if cfg.network.vpc_id is not None:
        return None
    needs = addresses_needed(cfg)
    nodes = subnet_cidrs(cidr)[1]
    if needs.total <= usable(nodes):
        return None
    found = (
        f"the node subnet {nodes} (half of network.cidr {cidr}) has {usable(nodes)} usable "
        f"addresses (AWS reserves {AWS_RESERVED}), the cluster needs {needs.total}: {needs.breakdown()}"
    )
    for prefix in range(cidr.prefixlen - 1, LARGEST_VPC_PREFIX - 1, -1):
        larger = ipaddress.IPv4Network((cidr.network_address, prefix), strict=False)
        if usable(subnet_cidrs(larger)[1]) >= needs.total:
            nodes = subnet_cidrs(larger)[1]
            return (
                f"{found}; use network.cidr {larger} (node subnet {nodes}, {usable(nodes)} usable addresses)"
            )
    if cfg.orchestrator == EKS:  # an existing VPC is refused on EKS (config/orchestrator.py)
        return f"{found}; even a /{LARGEST_VPC_PREFIX} network.cidr is too small: use fewer nodes"
    return (
        f"{found}; even a /{LARGEST_VPC_PREFIX} network.cidr is too small: use an existing VPC "
        f"(network.vpc_id and subnet_id) whose subnet has {needs.total} free addresses, or fewer nodes"
    )

"""Where the nodes live: an existing VPC and subnet, or the layout of the VPC the cluster creates."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from gpucluster.config import ClusterConfig
from gpucluster.config.network import subnet_cidrs


@dataclass(frozen=True)
class ResolvedNetwork:
    availability_zone: str
    # Both set: the nodes go into this VPC's subnet and nothing is created.
    existing_vpc_id: str | None
    existing_subnet_id: str | None
    # The created VPC's block and its (public, node) subnets, laid out as ec2.Vpc would.
    cidr: ipaddress.IPv4Network
    public_subnet: ipaddress.IPv4Network
    node_subnet: ipaddress.IPv4Network


def resolve_network(cfg: ClusterConfig) -> ResolvedNetwork:
    network = cfg.network
    public, nodes = subnet_cidrs(network.cidr)
    return ResolvedNetwork(
        availability_zone=cfg.availability_zone,
        existing_vpc_id=network.vpc_id,
        existing_subnet_id=network.subnet_id,
        cidr=network.cidr,
        public_subnet=public,
        node_subnet=nodes,
    )

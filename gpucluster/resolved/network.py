"""Where the nodes live: an existing VPC and subnet, or the layout of the VPC the cluster creates."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from gpucluster.config import ClusterConfig
from gpucluster.config.accounting_database import second_zone
from gpucluster.config.network import subnet_cidrs

# The created VPC's two database subnets (an RDS subnet group spans two zones): the smallest
# size RDS needs room in, laid out in the free space after the public subnet, which the node
# subnet (the VPC's second half) never reaches.
DATABASE_SUBNET_PREFIX = 27


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
    # accounting.database or orchestrator eks in a created VPC: (block, zone) of the subnet in
    # the cluster's zone, then of the spare one in the second zone; () otherwise. The database's
    # subnet group and the EKS control plane both take these two.
    database_subnets: tuple[tuple[ipaddress.IPv4Network, str], ...]


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
        database_subnets=_database_subnets(cfg, public),
    )


def _database_subnets(
    cfg: ClusterConfig, public: ipaddress.IPv4Network
) -> tuple[tuple[ipaddress.IPv4Network, str], ...]:
    database = None if cfg.accounting is None else cfg.accounting.database
    # An EKS control plane needs subnets in two zones as well (EKS user guide, "View Amazon
    # EKS networking requirements"): on EKS these two subnets are always laid out.
    two_zones = database is not None or cfg.orchestrator == "eks"
    if not two_zones or cfg.network.vpc_id is not None:
        return ()
    size = 2 ** (32 - DATABASE_SUBNET_PREFIX)
    start = -(-(int(public.broadcast_address) + 1) // size) * size  # aligned to its own size
    first, second = (ipaddress.IPv4Network((start + i * size, DATABASE_SUBNET_PREFIX)) for i in (0, 1))
    chosen = database.second_availability_zone if database is not None else None
    spare_zone = second_zone(cfg.region, cfg.availability_zone, chosen)
    return ((first, cfg.availability_zone), (second, spare_zone))

"""`network:`: create a VPC from a private CIDR, or use an existing VPC and private subnet."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from gpucluster.config.fields import StrictModel, SubnetId, VpcId, fail, fail_at, from_text

# Python's is_private also admits loopback and link-local, which a VPC cannot use.
RFC1918 = tuple(ipaddress.IPv4Network(block) for block in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


class NetworkConfig(StrictModel):
    vpc_id: VpcId | None = Field(
        default=None, description="Existing VPC to use; null creates a VPC from `cidr`."
    )
    subnet_id: SubnetId | None = Field(
        default=None,
        description="Private subnet in `availability_zone`; required with `vpc_id`.",
    )
    cidr: Annotated[
        ipaddress.IPv4Network, *from_text(ipaddress.IPv4Network, "a CIDR block like 10.80.0.0/16")
    ] = Field(
        default=ipaddress.IPv4Network("10.80.0.0/16"),
        description="CIDR of the created VPC: private (RFC 1918), /16 to /22.",
    )

    @model_validator(mode="before")
    @classmethod
    def _no_ssh_ingress(cls, data: object) -> object:
        # Nodes live on private subnets with no route from the networks a user would
        # list, so the old setting opened port 22 to nobody while looking like access.
        if isinstance(data, dict) and "ssh_ingress_cidrs" in data:
            raise fail_at(
                "ssh_ingress_cidrs",
                "was removed: nodes are on private subnets that those networks cannot reach; "
                "delete the key and connect with ssh through Session Manager (a ProxyCommand that "
                'runs AWS-StartSSHSession, README "Deploying") as one of users:',
            )
        return data

    @field_validator("cidr")
    @classmethod
    def _cidr_sane(cls, value: ipaddress.IPv4Network) -> ipaddress.IPv4Network:
        if not any(value.subnet_of(block) for block in RFC1918):
            raise fail(
                "cidr",
                f"{value} is not a private range; use one inside 10.0.0.0/8, 172.16.0.0/12 or 192.168.0.0/16",
            )
        if not 16 <= value.prefixlen <= 22:
            raise fail(
                "cidr",
                f"{value} has prefix /{value.prefixlen}; use /16 to /22 so the compute subnet "
                "has room for every node and EFA interface",
            )
        return value

    @model_validator(mode="after")
    def _imported_vpc_needs_subnet(self) -> NetworkConfig:
        if (self.vpc_id is None) != (self.subnet_id is None):
            raise fail_at(
                "subnet_id",
                "vpc_id and subnet_id go together: set both to use an existing VPC "
                "(subnet_id a private subnet in availability_zone), or neither to create one",
            )
        return self


def subnet_cidrs(vpc: ipaddress.IPv4Network) -> tuple[ipaddress.IPv4Network, ipaddress.IPv4Network]:
    """(public, nodes) of a created VPC: a /+6 for the NAT gateway, half the VPC for the
    nodes, file systems and mount target (subnet_addresses counts what they take).
    Allocated as ec2.Vpc does: in order, each at the next free address aligned to its own
    size. The network stack (constructs_lib/cluster_network.py) lays them out from here."""
    allocated = []
    next_free = int(vpc.network_address)
    for prefix in (vpc.prefixlen + 6, vpc.prefixlen + 1):
        size = 2 ** (32 - prefix)
        start = -(-next_free // size) * size
        allocated.append(ipaddress.IPv4Network((start, prefix)))
        next_free = start + size
    public, nodes = allocated
    return public, nodes

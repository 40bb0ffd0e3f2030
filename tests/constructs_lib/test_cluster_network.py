"""ClusterNetwork: a new VPC with one node subnet in the configured zone, or the ids of
an existing VPC and subnet with nothing created."""

from __future__ import annotations

import pytest

from gpucluster.config.network import subnet_cidrs
from gpucluster.constructs_lib.cluster_network import ClusterNetwork, ClusterNetworkProps
from gpucluster.resolved import resolve
from tests.constructs_lib.small_stack import Built, build


def _network(cfg) -> Built[ClusterNetwork]:
    network = resolve(cfg).network
    props = ClusterNetworkProps(
        availability_zone=network.availability_zone,
        existing_vpc_id=network.existing_vpc_id,
        existing_subnet_id=network.existing_subnet_id,
        cidr=network.cidr,
        public_subnet=network.public_subnet,
        node_subnet=network.node_subnet,
    )
    return build(lambda stack: ClusterNetwork(stack, "Network", props), cfg)


@pytest.fixture(scope="module")
def created(example_configs) -> Built[ClusterNetwork]:
    return _network(example_configs["default"])


@pytest.fixture(scope="module")
def imported(example_configs) -> Built[ClusterNetwork]:
    return _network(example_configs["p4d-on-demand"])


def test_a_new_vpc_has_one_public_and_one_node_subnet_in_the_configured_zone(created, example_configs):
    cfg = example_configs["default"]
    assert created.only("AWS::EC2::VPC")["CidrBlock"] == str(cfg.network.cidr)
    subnets = created.resources("AWS::EC2::Subnet")
    assert len(subnets) == 2
    assert {s["Properties"]["AvailabilityZone"] for s in subnets.values()} == {cfg.availability_zone}
    node_subnet = created.construct.created_subnet
    assert node_subnet is not None
    node = subnets[created.logical_id(node_subnet)]["Properties"]
    assert node["MapPublicIpOnLaunch"] is False
    # Half the VPC for nodes: a p5 takes 33 addresses, so the node subnet must be large.
    assert node["CidrBlock"].endswith(f"/{cfg.network.cidr.prefixlen + 1}")


def test_a_new_vpc_has_one_nat_gateway_and_an_s3_gateway_endpoint(created):
    created.template.resource_count_is("AWS::EC2::NatGateway", 1)
    endpoint = created.only("AWS::EC2::VPCEndpoint")
    assert endpoint["VpcEndpointType"] == "Gateway"
    assert "s3" in str(endpoint["ServiceName"])


def test_rejected_traffic_is_logged_to_a_retained_group(created):
    assert created.only("AWS::EC2::FlowLog")["TrafficType"] == "REJECT"
    (group,) = created.resources("AWS::Logs::LogGroup").values()
    assert group["DeletionPolicy"] == "Retain"
    assert group["Properties"]["RetentionInDays"] == 30


def test_an_existing_vpc_is_used_as_given_and_nothing_is_created(imported, example_configs):
    network = example_configs["p4d-on-demand"].network
    assert (imported.construct.vpc_id, imported.construct.subnet_id) == (network.vpc_id, network.subnet_id)
    assert imported.construct.created_subnet is None
    assert imported.template.to_json().get("Resources", {}) == {}


@pytest.mark.parametrize("cidr", ["10.80.0.0/16", "172.16.0.0/18", "10.1.64.0/20", "192.168.4.0/22"])
def test_subnets_are_laid_out_as_ec2_vpc_lays_them_out(cidr):
    """The VPC is written without ec2.Vpc; the subnet CIDRs it allocated stay the same."""
    import ipaddress

    from aws_cdk import aws_ec2 as ec2

    network = ipaddress.IPv4Network(cidr)

    def l2_vpc(stack):
        return ec2.Vpc(
            stack,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(cidr),
            availability_zones=["us-east-2a"],
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=network.prefixlen + 6
                ),
                ec2.SubnetConfiguration(
                    name="nodes",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=network.prefixlen + 1,
                ),
            ],
        )

    built = build(l2_vpc)
    by_kind = {
        s["Properties"]["MapPublicIpOnLaunch"]: s["Properties"]["CidrBlock"]
        for s in built.resources("AWS::EC2::Subnet").values()
    }
    public, nodes = subnet_cidrs(network)
    assert (by_kind[True], by_kind[False]) == (str(public), str(nodes))

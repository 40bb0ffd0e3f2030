"""The node subnet must hold every address the cluster takes (gpucluster/config/subnet_addresses.py):
a created VPC too small for it is refused by validate, naming the subnet, the addresses
needed and a network.cidr that fits."""

from __future__ import annotations

import copy
import ipaddress

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.catalog import load_catalog
from gpucluster.config import ClusterConfig, FsxLustreConfig
from gpucluster.config.loader import parse_config
from gpucluster.config.network import subnet_cidrs
from gpucluster.config.subnet_addresses import (
    addresses_needed,
    fsx_addresses,
    node_addresses,
    prefix_for,
    usable,
)
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
CATALOG = load_catalog()


def cluster(cidr: str, groups: int, nodes: int, **group: object) -> dict:
    data = copy.deepcopy(DEFAULT)
    data["network"]["cidr"] = cidr
    template = {**data["compute_groups"][0], "count": nodes, **group}
    data["compute_groups"] = [{**template, "name": f"g{i}"} for i in range(groups)]
    return data


def problems(data: dict) -> list[str]:
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def test_eight_blocks_of_64_do_not_fit_a_slash_22():
    # The case: a /22 leaves a /23 for nodes, 507 usable addresses.
    found = problems(cluster("10.80.0.0/22", 8, 64))
    assert len(found) == 1
    assert found[0].startswith(
        "network.cidr: the node subnet 10.80.2.0/23 (half of network.cidr 10.80.0.0/22) has 507 usable "
        "addresses (AWS reserves 5), the cluster needs 521: head 2 (the new one starts before the old "
        "one stops), login 1, group g0 64 (64 nodes x 1), "
    )
    assert found[0].endswith(
        "FSx 5 (estimate), EFS mount target 1; use network.cidr 10.80.0.0/21 (node subnet "
        "10.80.4.0/22, 1019 usable addresses)"
    )


def test_sixteen_groups_of_1024_need_a_slash_16():
    found = problems(cluster("10.80.0.0/22", 16, 1024, capacity={"type": "on-demand"}))
    assert len(found) == 1 and "the cluster needs 16393: " in found[0]
    assert found[0].endswith(
        "use network.cidr 10.80.0.0/16 (node subnet 10.80.128.0/17, 32763 usable addresses)"
    )


def test_the_boundary_is_exact():
    # 507 usable: head 2, login 1, FSx 5, EFS 1 leave 498 for nodes of one address each.
    on_demand = {"capacity": {"type": "on-demand"}}
    assert problems(cluster("10.80.0.0/22", 1, 498, **on_demand)) == []
    assert "the cluster needs 508:" in problems(cluster("10.80.0.0/22", 1, 499, **on_demand))[0]


def test_an_existing_vpc_is_left_to_preflight():
    data = cluster("10.80.0.0/22", 16, 1024, capacity={"type": "on-demand"})
    data["network"].update(vpc_id="vpc-0a1b2c3d4e5f67890", subnet_id="subnet-0a1b2c3d4e5f67890")
    assert problems(data) == []


@pytest.mark.parametrize("name", CATALOG.names())
def test_a_node_takes_an_address_per_interface_with_an_ip(name):
    info = CATALOG.get(name)
    # Every catalog type puts ENA on card 0 and efa-only everywhere else: one address,
    # whatever its EFA count (a p5.48xlarge's 32 EFA interfaces take none).
    assert node_addresses(info, efa=info.efa_supported) == 1
    assert node_addresses(info, efa=False) == 1


def test_an_efa_interface_with_ena_takes_an_address():
    p5 = CATALOG.get("p5.48xlarge")
    single = p5.network_cards[0].model_copy(update={"max_interfaces": 1})
    # Card 0 holding one interface gets `efa` (EFA with ENA), which has an IP.
    odd = p5.model_copy(update={"network_cards": (single, *p5.network_cards[1:])})
    assert node_addresses(odd, efa=True) == 1
    card = p5.network_cards[1].model_copy(update={"interface_types": ("interface",)})
    no_efa_card = p5.model_copy(
        update={"network_cards": (p5.network_cards[0], card, *p5.network_cards[2:]), "max_efa_interfaces": 31}
    )
    assert node_addresses(no_efa_card, efa=True) == 1


def test_fsx_takes_an_address_per_1200_gib_and_per_metadata_server():
    assert (
        fsx_addresses(FsxLustreConfig(storage_gib=1200, deployment_type="SCRATCH_2", throughput_per_tib=None))
        == 2
    )
    assert fsx_addresses(FsxLustreConfig(storage_gib=4800)) == 5
    assert fsx_addresses(FsxLustreConfig(storage_gib=4800, metadata_iops=24000)) == 6


def test_no_fsx_takes_no_address():
    data = copy.deepcopy(DEFAULT)
    data["storage"] = {"fsx_lustre": None}
    needs = addresses_needed(ClusterConfig.model_validate(data))
    assert "FSx" not in needs.breakdown()
    assert needs.total == 2 + 1 + 2 + 1


@pytest.mark.parametrize(("needed", "prefix"), [(11, 28), (12, 27), (507, 23), (508, 22), (16393, 17)])
def test_prefix_for_is_the_smallest_subnet_that_holds_them(needed, prefix):
    assert prefix_for(needed) == prefix
    assert usable(ipaddress.IPv4Network(("10.0.0.0", prefix))) >= needed


def test_every_example_fits_its_subnet():
    for path in sorted((REPO / "examples").glob("*.yaml")):
        cfg = parse_config(path.read_text(), str(path))
        if cfg.network.vpc_id is None:
            assert addresses_needed(cfg).total <= usable(subnet_cidrs(cfg.network.cidr)[1]), path

"""On EKS the node subnet holds no head or login instance but the system node group, and the
VPC CNI gives every pod an address of it (gpucluster/eks_nodes.py): validate counts them."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.catalog import load_catalog
from gpucluster.config.loader import load_config, parse_config
from gpucluster.config.subnet_addresses import addresses_needed
from gpucluster.eks_nodes import MAX_PODS, SYSTEM_INSTANCE_TYPE, SYSTEM_INTERFACES, ipv4_per_interface
from tests.conftest import REPO

EKS = yaml.safe_load((REPO / "examples" / "p5-eks-slinky.yaml").read_text())


def problems(data: dict) -> list[str]:
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def eks(cidr: str, **group: object) -> dict:
    data = copy.deepcopy(EKS)
    data["network"]["cidr"] = cidr
    data["compute_groups"][0] |= group
    return data


@pytest.mark.parametrize("name", load_catalog().names())
def test_every_catalog_type_has_a_max_pods_figure_that_the_formula_explains(name):
    card0 = next(c.max_interfaces for c in load_catalog().get(name).network_cards if c.index == 0)
    assert (MAX_PODS[name] - 2) % card0 == 0
    assert ipv4_per_interface(name, card0) in (30, 50)


def test_the_system_type_figure_is_explained_too():
    assert (MAX_PODS[SYSTEM_INSTANCE_TYPE] - 2) % SYSTEM_INTERFACES == 0
    assert ipv4_per_interface(SYSTEM_INSTANCE_TYPE, SYSTEM_INTERFACES) == 15


def test_the_eks_example_counts_system_nodes_and_pod_addresses_and_no_head():
    needs = addresses_needed(load_config(REPO / "examples" / "p5-eks-slinky.yaml"))
    assert needs.breakdown() == (
        "system 120 (2 nodes x 60 with pods), group h100 200 (2 nodes x 100, 99 of them the VPC "
        "CNI's for pods), FSx 5 (estimate), EFS mount target 1"
    )


def test_pod_addresses_make_a_subnet_too_small_that_the_nodes_alone_fit():
    # Eight p5 nodes: 8 addresses for the nodes, 800 with the VPC CNI's; a /22 leaves 507.
    data = eks("10.70.0.0/22", count=8)
    [found] = problems(data)
    assert found.startswith("network.cidr: the node subnet 10.70.2.0/23 (half of network.cidr 10.70.0.0/22)")
    assert "the cluster needs 926: system 120" in found and "VPC CNI's for pods" in found
    assert found.endswith("use network.cidr 10.70.0.0/21 (node subnet 10.70.4.0/22, 1019 usable addresses)")
    ec2 = copy.deepcopy(data)
    ec2.pop("orchestrator")
    assert problems(ec2) == []


def test_too_large_for_any_created_vpc_on_eks_does_not_offer_an_existing_vpc():
    data = eks("10.70.0.0/16", count=400, instance_type="p4d.24xlarge", capacity={"type": "on-demand"})
    [found] = problems(data)
    assert found.endswith("even a /16 network.cidr is too small: use fewer nodes")

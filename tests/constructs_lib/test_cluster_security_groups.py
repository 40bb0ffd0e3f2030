"""ClusterSecurityGroups: nodes trust each other, the EFA group admits itself both ways,
storage admits NFS and Lustre from nodes, and EFA-enabled Lustre opens all traffic
between servers and clients. Nothing is open to an address range."""

from __future__ import annotations

from typing import Any

import pytest

from gpucluster.constructs_lib.cluster_security_groups import (
    ClusterSecurityGroups,
    ClusterSecurityGroupsProps,
)
from tests.constructs_lib.small_stack import VPC_ID, Built, build, group_id


def _groups(cfg) -> Built[ClusterSecurityGroups]:
    return build(
        lambda stack: ClusterSecurityGroups(
            stack,
            "Groups",
            ClusterSecurityGroupsProps(
                cluster=cfg.name,
                vpc_id=VPC_ID,
                efa_lustre=cfg.storage.fsx_lustre is not None and cfg.storage.fsx_lustre.efa,
            ),
        ),
        cfg,
    )


@pytest.fixture(scope="module")
def plain(example_configs) -> Built[ClusterSecurityGroups]:
    return _groups(example_configs["default"])  # FSx without EFA


@pytest.fixture(scope="module")
def efa_lustre(example_configs) -> Built[ClusterSecurityGroups]:
    return _groups(example_configs["p5en-capacity-block"])  # FSx with EFA


def _rules(built: Built[ClusterSecurityGroups], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in built.resources(f"AWS::EC2::SecurityGroup{kind}").values()]


def _from(built, target, source) -> list[dict[str, Any]]:
    return [
        rule
        for rule in _rules(built, "Ingress")
        if rule["GroupId"] == group_id(built, target)
        and rule["SourceSecurityGroupId"] == group_id(built, source)
    ]


def test_four_groups_in_the_given_vpc(plain):
    groups = plain.resources("AWS::EC2::SecurityGroup")
    assert len(groups) == 4
    assert {g["Properties"]["VpcId"] for g in groups.values()} == {VPC_ID}


def test_the_head_has_its_own_group_without_a_database_and_it_admits_nothing(plain):
    # Present on every cluster, so a later rule naming the head changes no instance.
    head = plain.construct.head
    assert plain.construct.database is None
    assert not [rule for rule in _rules(plain, "Ingress") if rule["GroupId"] == group_id(plain, head)]


def test_the_efa_group_allows_all_traffic_from_and_to_itself(plain):
    efa = plain.construct.efa
    (inbound,) = _from(plain, efa, efa)
    assert inbound["IpProtocol"] == "-1"
    (outbound,) = _rules(plain, "Egress")
    assert outbound["GroupId"] == outbound["DestinationSecurityGroupId"] == group_id(plain, efa)
    assert outbound["IpProtocol"] == "-1"


def test_nodes_trust_each_other(plain):
    nodes = plain.construct.nodes
    (rule,) = _from(plain, nodes, nodes)
    assert rule["IpProtocol"] == "-1"


def test_storage_admits_nfs_and_lustre_from_nodes_and_lustre_from_itself(plain):
    groups = plain.construct
    from_nodes = {
        (r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in _from(plain, groups.storage, groups.nodes)
    }
    assert from_nodes == {("tcp", 2049, 2049), ("tcp", 988, 988), ("tcp", 1018, 1023)}
    from_itself = {
        (r["IpProtocol"], r["FromPort"], r["ToPort"]) for r in _from(plain, groups.storage, groups.storage)
    }
    assert from_itself == {("tcp", 988, 988), ("tcp", 1018, 1023)}
    assert _from(plain, groups.nodes, groups.storage) == []


def test_efa_enabled_lustre_opens_all_traffic_between_servers_and_clients(efa_lustre):
    groups = efa_lustre.construct
    assert [r["IpProtocol"] for r in _from(efa_lustre, groups.storage, groups.nodes)].count("-1") == 1
    assert [r["IpProtocol"] for r in _from(efa_lustre, groups.storage, groups.storage)].count("-1") == 1
    (back,) = _from(efa_lustre, groups.nodes, groups.storage)
    assert back["IpProtocol"] == "-1"


@pytest.mark.parametrize("built", ["plain", "efa_lustre"])
def test_no_rule_admits_an_address_range(request, built):
    built = request.getfixturevalue(built)
    for rule in _rules(built, "Ingress"):
        assert "CidrIp" not in rule and "CidrIpv6" not in rule, rule

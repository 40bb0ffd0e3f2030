"""EfaLaunchTemplate: the network interfaces the EC2 user guide prescribes for an EFA type
("Maximize network bandwidth on Amazon EC2 instances with multiple network cards": an ENA
primary on card 0 device 0, then one efa-only interface per EFA card), each carrying the
given security groups, and the capacity the group buys from."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.constructs_lib.efa_launch_template import (
    CapacityTarget,
    EfaLaunchTemplate,
    EfaLaunchTemplateProps,
)
from gpucluster.efa import efa_interface_layout
from gpucluster.resolved.groups import PRIMARY_ONLY
from tests.constructs_lib.small_stack import EFA_SG, IMAGE_ID, NODES_SG, PROFILE_ARN, Built, build

BLOCK = CapacityTarget(market_type="capacity-block", reservation_id="cr-0a1b2c3d4e5f67890")
ODCR = CapacityTarget(market_type=None, reservation_id="cr-0123456789abcdef0")
ON_DEMAND = CapacityTarget(market_type=None, reservation_id=None)


def _template(instance_type: str, efa: bool, capacity: CapacityTarget, placement: str | None = None):
    props = EfaLaunchTemplateProps(
        instance_type=instance_type,
        interfaces=tuple(efa_interface_layout(load_catalog().get(instance_type))) if efa else PRIMARY_ONLY,
        image_id=IMAGE_ID,
        instance_profile_arn=PROFILE_ARN,
        security_group_ids=[NODES_SG, EFA_SG],
        user_data="#!/bin/bash\ntrue\n",
        root_volume_gib=512,
        capacity=capacity,
        placement_group_name=placement,
        tags={"gpucluster:cluster": "demo"},
    )
    return build(lambda stack: EfaLaunchTemplate(stack, "Template", props))


def _data(built: Built[EfaLaunchTemplate]) -> dict[str, Any]:
    data: dict[str, Any] = built.only("AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    return data


@pytest.fixture(scope="module")
def p5() -> Built[EfaLaunchTemplate]:
    return _template("p5.48xlarge", True, BLOCK)


# EFA cards per type, written out rather than read from the catalog: p5.48xlarge's 32 EFA
# and one ENA are the EC2 user guide's example (efa-acc-inst-types); p5en and p4d as the
# examples' comments and the pinned catalog's MaximumEfaInterfaces give them.
@pytest.mark.parametrize(
    ("instance_type", "efa_cards"), [("p5.48xlarge", 32), ("p5en.48xlarge", 16), ("p4d.24xlarge", 4)]
)
def test_one_efa_interface_per_network_card_and_one_ena_primary(p5, instance_type, efa_cards):
    built = p5 if instance_type == "p5.48xlarge" else _template(instance_type, True, ON_DEMAND)
    interfaces = _data(built)["NetworkInterfaces"]
    efa = [nic for nic in interfaces if nic.get("InterfaceType") in ("efa", "efa-only")]
    assert Counter(nic["NetworkCardIndex"] for nic in efa) == dict.fromkeys(range(efa_cards), 1)
    (primary,) = [nic for nic in interfaces if "InterfaceType" not in nic]
    assert (primary["NetworkCardIndex"], primary["DeviceIndex"]) == (0, 0)
    # Card 0's EFA sits beside the primary, on device 1.
    assert [nic["DeviceIndex"] for nic in efa if nic["NetworkCardIndex"] == 0] == [1]


def test_every_interface_carries_both_groups_and_no_subnet(p5):
    data = _data(p5)
    for nic in data["NetworkInterfaces"]:
        assert nic["Groups"] == [NODES_SG, EFA_SG]
        assert "SubnetId" not in nic
        assert nic["DeleteOnTermination"] is True
    assert "SecurityGroupIds" not in data, "NetworkInterfaces and SecurityGroupIds exclude each other"


def test_without_efa_a_single_primary_interface():
    interfaces = _data(_template("p5.48xlarge", False, ON_DEMAND))["NetworkInterfaces"]
    assert interfaces == [
        {"DeleteOnTermination": True, "DeviceIndex": 0, "Groups": [NODES_SG, EFA_SG], "NetworkCardIndex": 0}
    ]


def test_a_capacity_block_is_bought_as_one_and_targeted_by_id(p5):
    data = _data(p5)
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    target = data["CapacityReservationSpecification"]["CapacityReservationTarget"]
    assert target == {"CapacityReservationId": BLOCK.reservation_id}


def test_an_odcr_is_targeted_without_a_market_and_on_demand_has_neither():
    odcr = _data(_template("p4d.24xlarge", True, ODCR, placement="eval-odcr"))
    assert "InstanceMarketOptions" not in odcr
    assert odcr["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": ODCR.reservation_id
    }
    assert odcr["Placement"] == {"GroupName": "eval-odcr"}
    on_demand = _data(_template("p4d.24xlarge", True, ON_DEMAND))
    assert not {"InstanceMarketOptions", "CapacityReservationSpecification", "Placement"} & set(on_demand)


def test_imdsv2_only_and_an_encrypted_root(p5):
    data = _data(p5)
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    (root,) = data["BlockDeviceMappings"]
    assert root["Ebs"] == {
        "VolumeSize": 512,
        "VolumeType": "gp3",
        "Encrypted": True,
        "DeleteOnTermination": True,
    }
    assert data["ImageId"] == IMAGE_ID and data["InstanceType"] == "p5.48xlarge"

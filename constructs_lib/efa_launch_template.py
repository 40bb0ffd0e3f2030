"""Launch template for a GPU node with every EFA interface its type has.

The interface layout comes from the instance catalog (gpucluster.efa); each
interface carries the node and EFA security groups. Subnets are left to the
Auto Scaling group, which places every interface in its VPCZoneIdentifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct

from constructs_lib.cfn import Resource, resource
from constructs_lib.launch_settings import imds_v2_only, root_volume, tag_specifications
from gpucluster.catalog import InstanceType
from gpucluster.efa import InterfaceSlot, efa_interface_layout


@dataclass(frozen=True)
class CapacityTarget:
    """How instances are bought: a Capacity Block, an ODCR, or on demand (None id)."""

    market_type: str | None
    reservation_id: str | None


@dataclass(frozen=True)
class EfaLaunchTemplateProps:
    instance: InstanceType
    efa: bool
    image_id: str
    instance_profile_arn: str
    security_group_ids: list[str]
    user_data: str
    root_volume_gib: int
    capacity: CapacityTarget
    placement_group_name: str | None
    tags: dict[str, str]


def network_interfaces(slots: list[InterfaceSlot], security_group_ids: list[str]) -> list[dict[str, Any]]:
    """`LaunchTemplateData.NetworkInterfaces` as CloudFormation JSON (a p5 has 33)."""
    interfaces = []
    for slot in slots:
        interface: dict[str, Any] = {
            "DeleteOnTermination": True,
            "DeviceIndex": slot.device_index,
            "Groups": security_group_ids,
        }
        if slot.interface_type != "interface":
            interface["InterfaceType"] = slot.interface_type
        interface["NetworkCardIndex"] = slot.network_card_index
        interfaces.append(interface)
    return interfaces


class EfaLaunchTemplate(Construct):
    template: Resource

    def __init__(self, scope: Construct, id: str, props: EfaLaunchTemplateProps) -> None:
        super().__init__(scope, id)
        slots = efa_interface_layout(props.instance) if props.efa else [InterfaceSlot(0, 0, "interface")]
        data: dict[str, Any] = {
            "BlockDeviceMappings": [root_volume(props.root_volume_gib)],
            "EbsOptimized": True,
            "IamInstanceProfile": {"Arn": props.instance_profile_arn},
            "ImageId": props.image_id,
            "InstanceType": props.instance.name,
            "MetadataOptions": imds_v2_only(),
            "NetworkInterfaces": network_interfaces(slots, props.security_group_ids),
            "TagSpecifications": tag_specifications(props.tags, ("instance", "volume", "network-interface")),
            "UserData": {"Fn::Base64": props.user_data},
        }
        if props.capacity.market_type is not None:
            data["InstanceMarketOptions"] = {"MarketType": props.capacity.market_type}
        if props.capacity.reservation_id is not None:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationTarget": {"CapacityReservationId": props.capacity.reservation_id}
            }
        if props.placement_group_name:
            data["Placement"] = {"GroupName": props.placement_group_name}
        self.template = resource(self, "Template", "AWS::EC2::LaunchTemplate", {"LaunchTemplateData": data})

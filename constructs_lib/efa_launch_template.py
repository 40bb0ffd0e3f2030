"""Launch template for a GPU node with every EFA interface its type has.

The interface layout comes from the instance catalog (gpucluster.efa); each
interface carries the node and EFA security groups. Subnets are left to the
Auto Scaling group, which places every interface in its VPCZoneIdentifier.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from constructs_lib.launch_settings import cfn_tags, imds_v2_only, root_volume
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
    """`LaunchTemplateData.NetworkInterfaces` as CloudFormation JSON.

    Written as plain JSON in one property override rather than as one jsii struct per
    interface: a p5 has 33 interfaces, and building them as structs made the synth of a
    many-group cluster grow with its interface count.
    """
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
    template: ec2.CfnLaunchTemplate

    def __init__(self, scope: Construct, id: str, props: EfaLaunchTemplateProps) -> None:
        super().__init__(scope, id)
        slots = efa_interface_layout(props.instance) if props.efa else [InterfaceSlot(0, 0, "interface")]
        market = None
        if props.capacity.market_type is not None:
            market = ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(
                market_type=props.capacity.market_type
            )
        reservation = None
        if props.capacity.reservation_id is not None:
            reservation = ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(
                capacity_reservation_target=ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(
                    capacity_reservation_id=props.capacity.reservation_id
                )
            )
        tag_list = cfn_tags(props.tags)
        self.template = ec2.CfnLaunchTemplate(
            self,
            "Template",
            launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
                image_id=props.image_id,
                instance_type=props.instance.name,
                iam_instance_profile=ec2.CfnLaunchTemplate.IamInstanceProfileProperty(
                    arn=props.instance_profile_arn
                ),
                instance_market_options=market,
                capacity_reservation_specification=reservation,
                placement=(
                    ec2.CfnLaunchTemplate.PlacementProperty(group_name=props.placement_group_name)
                    if props.placement_group_name
                    else None
                ),
                metadata_options=imds_v2_only(),
                block_device_mappings=[root_volume(props.root_volume_gib)],
                ebs_optimized=True,
                user_data=cdk.Fn.base64(props.user_data),
                tag_specifications=[
                    ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type=kind, tags=tag_list)
                    for kind in ("instance", "volume", "network-interface")
                ],
            ),
        )
        self.template.add_property_override(
            "LaunchTemplateData.NetworkInterfaces",
            network_interfaces(slots, props.security_group_ids),
        )

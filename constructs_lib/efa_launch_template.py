"""Launch template for a GPU node with every EFA interface its type has.

The interface layout comes from the instance catalog (gpucluster.efa, resolved per
group); each interface carries the node and EFA security groups. Subnets are left to the
Auto Scaling group, which places every interface in its VPCZoneIdentifier.
"""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource
from gpucluster.constructs_lib.launch_settings import (
    NODE_METADATA_HOPS,
    GpuLaunch,
    NodeLaunch,
    node_launch_template,
)
from gpucluster.efa import InterfaceSlot


@dataclass(frozen=True)
class CapacityTarget:
    """How instances are bought: a Capacity Block, an ODCR, or on demand (None id)."""

    market_type: str | None
    reservation_id: str | None


@dataclass(frozen=True)
class EfaLaunchTemplateProps:
    instance_type: str
    # Every network interface, in order: the primary alone without EFA (ResolvedGroup.interfaces).
    interfaces: tuple[InterfaceSlot, ...]
    # None: an EKS managed node group supplies image, profile and user data (NodeLaunch).
    image_id: str | None
    instance_profile_arn: str | None
    security_group_ids: list[str]
    user_data: str | None
    root_volume_gib: int
    capacity: CapacityTarget
    placement_group_name: str | None
    tags: dict[str, str]
    root_device_name: str = "/dev/sda1"
    metadata_hops: int = NODE_METADATA_HOPS


class EfaLaunchTemplate(Construct):
    template: Resource

    def __init__(self, scope: Construct, id: str, props: EfaLaunchTemplateProps) -> None:
        super().__init__(scope, id)
        gpu = GpuLaunch(
            interfaces=list(props.interfaces),
            interface_groups=props.security_group_ids,
            market_type=props.capacity.market_type,
            reservation_id=props.capacity.reservation_id,
            placement_group_name=props.placement_group_name,
        )
        launch = NodeLaunch(
            image_id=props.image_id,
            instance_type=props.instance_type,
            instance_profile_arn=props.instance_profile_arn,
            root_volume_gib=props.root_volume_gib,
            user_data=props.user_data,
            tags=props.tags,
            tagged=("instance", "volume", "network-interface"),
            gpu=gpu,
            root_device_name=props.root_device_name,
            metadata_hops=props.metadata_hops,
        )
        self.template = node_launch_template(self, "Template", launch)

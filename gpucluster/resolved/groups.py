"""One compute group resolved: its catalog entry, its size and capacity, its network
interfaces, its time limits and its Slurm names."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpucluster import names
from gpucluster.catalog import InstanceType
from gpucluster.config import CapacityBlockCapacity, ClusterConfig, ComputeGroupConfig, OdcrCapacity
from gpucluster.efa import InterfaceSlot, efa_interface_layout

# A group without EFA launches with the primary interface only.
PRIMARY_ONLY = (InterfaceSlot(0, 0, "interface"),)

CapacityType = Literal["on-demand", "odcr", "capacity-block"]


@dataclass(frozen=True)
class ResolvedGroup:
    name: str
    instance: InstanceType
    count: int
    capacity_type: CapacityType
    # The Capacity Block's or ODCR's id; None on demand.
    reservation_id: str | None
    root_volume_gib: int
    # The cluster placement group the group's template creates, or the existing one (an
    # ODCR's) it launches into as is; neither on a Capacity Block (ComputeGroupConfig).
    creates_placement_group: bool
    existing_placement_group: str | None
    # Every network interface of the group's launch template (gpucluster.efa), and how many
    # of them carry EFA (0 with efa: false).
    interfaces: tuple[InterfaceSlot, ...]
    efa_count: int
    # The partition's DefaultTime and MaxTime (max_time, else the block's length, else 7 days).
    default_time_minutes: int
    max_time_minutes: int
    # The Slurm node name of the group's instances with {instance_id} left to fill
    # (names.COMPUTE_NODE_NAME_FORMAT), its partition and its node feature.
    node_name_format: str
    partition: str
    feature: str
    # The SSM parameter holding the group's facts for the head node.
    parameter: str

    def node_name(self, instance_id: str) -> str:
        return names.compute_node_name(self.name, instance_id)


def resolve_group(cfg: ClusterConfig, group: ComputeGroupConfig) -> ResolvedGroup:
    instance = group.instance
    interfaces = tuple(efa_interface_layout(instance)) if group.efa else PRIMARY_ONLY
    capacity = group.capacity
    return ResolvedGroup(
        name=group.name,
        instance=instance,
        count=group.count,
        capacity_type=capacity.type,
        reservation_id=capacity.reservation_id
        if isinstance(capacity, CapacityBlockCapacity | OdcrCapacity)
        else None,
        root_volume_gib=group.root_volume_gib,
        creates_placement_group=group.creates_placement_group,
        existing_placement_group=group.existing_placement_group,
        interfaces=interfaces,
        efa_count=sum(1 for slot in interfaces if slot.interface_type != "interface"),
        default_time_minutes=group.default_time,
        max_time_minutes=group.max_time_minutes,
        node_name_format=names.COMPUTE_NODE_NAME_FORMAT.format(group=group.name, instance_id="{instance_id}"),
        partition=names.group_partition(group.name),
        feature=names.group_feature(group.name),
        parameter=names.compute_group_parameter(cfg, group.name),
    )

"""One compute group: EFA launch template, Auto Scaling group, launch hook, facts.

On-demand and ODCR groups run `count` nodes all the time. On-demand groups
get a new cluster placement group by default; ODCR groups launch into the
placement group their reservation was made in (by name) or none, never a new
one, because a reservation serves only launches into its own group.
Capacity Block groups start at zero and leave the desired capacity to the
head node's capacity-block controller, which reads the block's state and
dates from EC2 at run time: CloudFormation scheduled actions fail once their
start time has passed, and clusters are usually deployed after their block
began or the block gets extended.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.cfn import Resource, resource, string_parameter
from gpucluster.constructs_lib.efa_launch_template import (
    CapacityTarget,
    EfaLaunchTemplate,
    EfaLaunchTemplateProps,
)
from gpucluster.constructs_lib.launch_settings import launch_template_ref, node_tags
from gpucluster.constructs_lib.nag import acknowledge
from gpucluster.efa import InterfaceSlot

CAPACITY_BLOCK = "capacity-block"


@dataclass(frozen=True)
class ComputeFleetProps:
    cluster: str
    cluster_tags: Mapping[str, str]
    group: str
    instance_type: str
    count: int
    # on-demand, odcr or capacity-block, and the reservation's id (None on demand).
    capacity_type: str
    reservation_id: str | None
    # Every network interface, in order (ResolvedGroup.interfaces).
    interfaces: tuple[InterfaceSlot, ...]
    root_volume_gib: int
    # Where the group's facts are published for the head node (ResolvedGroup.parameter).
    facts_parameter: str
    # The bootstrap's waits plus a margin (NodeFiles.launch_hook_timeout_seconds): a slow but
    # healthy node is not abandoned while it is inside its own waits; it also sends
    # heartbeats while it boots.
    launch_hook_timeout_seconds: int
    image_id: str
    subnet_id: str
    instance_profile_arn: str
    security_group_ids: list[str]
    user_data: str
    # Exactly one of these places the group; both unset: no placement group.
    creates_placement_group: bool = False
    existing_placement_group: str | None = None

    def __post_init__(self) -> None:
        if self.creates_placement_group and self.existing_placement_group is not None:
            raise ValueError("a compute fleet either creates a placement group or joins one, not both")


def capacity_target(capacity_type: str, reservation_id: str | None) -> CapacityTarget:
    """A Capacity Block is its own market; an ODCR is targeted by id; on demand is neither."""
    market_type = CAPACITY_BLOCK if capacity_type == CAPACITY_BLOCK else None
    return CapacityTarget(market_type=market_type, reservation_id=reservation_id)


class ComputeFleet(Construct):
    launch_template: EfaLaunchTemplate
    group: Resource
    placement_group: Resource | None

    def __init__(self, scope: Construct, id: str, props: ComputeFleetProps) -> None:
        super().__init__(scope, id)
        self.placement_group = None
        placement_group_name = props.existing_placement_group
        if props.creates_placement_group:
            self.placement_group = resource(
                self, "PlacementGroup", "AWS::EC2::PlacementGroup", {"Strategy": "cluster"}
            )
            placement_group_name = self.placement_group.ref_token
        tags = node_tags(props.cluster_tags, "compute", **{names.GROUP_TAG: props.group})
        self.launch_template = EfaLaunchTemplate(
            self,
            "LaunchTemplate",
            EfaLaunchTemplateProps(
                instance_type=props.instance_type,
                interfaces=props.interfaces,
                image_id=props.image_id,
                instance_profile_arn=props.instance_profile_arn,
                security_group_ids=props.security_group_ids,
                user_data=props.user_data,
                root_volume_gib=props.root_volume_gib,
                capacity=capacity_target(props.capacity_type, props.reservation_id),
                placement_group_name=placement_group_name,
                tags=tags,
            ),
        )
        hook = {
            "DefaultResult": "ABANDON",
            "HeartbeatTimeout": props.launch_hook_timeout_seconds,
            "LifecycleHookName": names.LAUNCH_LIFECYCLE_HOOK,
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_LAUNCHING",
        }
        capacity_block = props.capacity_type == CAPACITY_BLOCK
        count = str(props.count)
        group_properties: dict[str, Any] = {
            # The grace period starts once an instance is InService, i.e. after the launch
            # hook completed; the hook already covers the boot, so none is needed (EC2 Auto
            # Scaling guide, "Set the health check grace period": with launch lifecycle
            # hooks it can be 0). Tying it to the hook kept a node that failed its EC2
            # status checks after joining in service for that long.
            "HealthCheckGracePeriod": 0,
            "HealthCheckType": "EC2",
            "LaunchTemplate": launch_template_ref(self.launch_template.template),
            "LifecycleHookSpecificationList": [hook],
            "MaxSize": count,
            "MinSize": "0" if capacity_block else count,
            "VPCZoneIdentifier": [props.subnet_id],
        }
        if not capacity_block:
            group_properties["DesiredCapacity"] = count
        self.group = resource(self, "Group", "AWS::AutoScaling::AutoScalingGroup", group_properties, tags)
        acknowledge(
            self.group,
            "AS3",
            "Node launches and failures are reported where operators look: Slurm node states, "
            "the launch lifecycle hook's ABANDON reason in the instance tags, and the node log group",
        )
        # The Auto Scaling group's name is known at deploy: the facts' JSON is joined around it.
        facts = {
            "group": props.group,
            "count": props.count,
            "capacity_type": props.capacity_type,
            "reservation_id": props.reservation_id,
            "instance_type": props.instance_type,
        }
        before_name = json.dumps(facts)[:-1] + ', "asg_name": "'
        string_parameter(
            self,
            "Facts",
            name=props.facts_parameter,
            value={"Fn::Join": ["", [before_name, self.group.ref_token, '"}']]},
            description=f"gpucluster {props.cluster}: compute group {props.group} for the head node",
        )

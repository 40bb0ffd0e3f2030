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
from dataclasses import dataclass
from typing import Any

from constructs import Construct

from gpucluster import names
from gpucluster.bootstrap import boot_budget
from gpucluster.config import (
    CapacityBlockCapacity,
    ClusterConfig,
    ComputeGroupConfig,
    OdcrCapacity,
)
from gpucluster.infra.constructs.cfn import Resource, resource, string_parameter
from gpucluster.infra.constructs.efa_launch_template import (
    CapacityTarget,
    EfaLaunchTemplate,
    EfaLaunchTemplateProps,
)
from gpucluster.infra.constructs.launch_settings import launch_template_ref, node_tags
from gpucluster.infra.constructs.nag import acknowledge

# The bootstrap's waits plus a margin (gpucluster.bootstrap.boot_budget): a slow but healthy node is
# not abandoned while it is inside its own waits; it also sends heartbeats while it boots.
LAUNCH_HOOK_TIMEOUT_SECONDS = boot_budget.heartbeat_timeout()


@dataclass(frozen=True)
class ComputeFleetProps:
    cfg: ClusterConfig
    group: ComputeGroupConfig
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


def capacity_target(group: ComputeGroupConfig) -> CapacityTarget:
    capacity = group.capacity
    if isinstance(capacity, CapacityBlockCapacity):
        return CapacityTarget(market_type="capacity-block", reservation_id=capacity.reservation_id)
    if isinstance(capacity, OdcrCapacity):
        return CapacityTarget(market_type=None, reservation_id=capacity.reservation_id)
    return CapacityTarget(market_type=None, reservation_id=None)


class ComputeFleet(Construct):
    launch_template: EfaLaunchTemplate
    group: Resource
    placement_group: Resource | None

    def __init__(self, scope: Construct, id: str, props: ComputeFleetProps) -> None:
        super().__init__(scope, id)
        cfg, group = props.cfg, props.group
        self.placement_group = None
        placement_group_name = props.existing_placement_group
        if props.creates_placement_group:
            self.placement_group = resource(
                self, "PlacementGroup", "AWS::EC2::PlacementGroup", {"Strategy": "cluster"}
            )
            placement_group_name = self.placement_group.ref_token
        tags = node_tags(cfg, "compute", **{names.GROUP_TAG: group.name})
        self.launch_template = EfaLaunchTemplate(
            self,
            "LaunchTemplate",
            EfaLaunchTemplateProps(
                instance=group.instance,
                efa=group.efa,
                image_id=props.image_id,
                instance_profile_arn=props.instance_profile_arn,
                security_group_ids=props.security_group_ids,
                user_data=props.user_data,
                root_volume_gib=group.root_volume_gib,
                capacity=capacity_target(group),
                placement_group_name=placement_group_name,
                tags=tags,
            ),
        )
        hook = {
            "DefaultResult": "ABANDON",
            "HeartbeatTimeout": LAUNCH_HOOK_TIMEOUT_SECONDS,
            "LifecycleHookName": names.LAUNCH_LIFECYCLE_HOOK,
            "LifecycleTransition": "autoscaling:EC2_INSTANCE_LAUNCHING",
        }
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
            "MaxSize": str(group.count),
            "MinSize": "0" if group.is_capacity_block else str(group.count),
            "VPCZoneIdentifier": [props.subnet_id],
        }
        if not group.is_capacity_block:
            group_properties["DesiredCapacity"] = str(group.count)
        self.group = resource(self, "Group", "AWS::AutoScaling::AutoScalingGroup", group_properties, tags)
        acknowledge(
            self.group,
            "AS3",
            "Node launches and failures are reported where operators look: Slurm node states, "
            "the launch lifecycle hook's ABANDON reason in the instance tags, and the node log group",
        )
        # The Auto Scaling group's name is known at deploy: the facts' JSON is joined around it.
        before_name = json.dumps(self._facts_before_name(group))[:-1] + ', "asg_name": "'
        string_parameter(
            self,
            "Facts",
            name=names.compute_group_parameter(cfg, group.name),
            value={"Fn::Join": ["", [before_name, self.group.ref_token, '"}']]},
            description=f"gpucluster {cfg.name}: compute group {group.name} for the head node",
        )

    @staticmethod
    def _facts_before_name(group: ComputeGroupConfig) -> dict[str, object]:
        capacity = group.capacity
        return {
            "group": group.name,
            "count": group.count,
            "capacity_type": capacity.type,
            "reservation_id": getattr(capacity, "reservation_id", None),
            "instance_type": group.instance_type,
        }

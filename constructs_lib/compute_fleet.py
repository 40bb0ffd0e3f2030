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

import aws_cdk as cdk
from aws_cdk import aws_autoscaling as autoscaling
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from constructs_lib.efa_launch_template import (
    CapacityTarget,
    EfaLaunchTemplate,
    EfaLaunchTemplateProps,
)
from constructs_lib.launch_settings import node_tags
from constructs_lib.nag import acknowledge
from gpucluster import names
from gpucluster.bootstrap import boot_budget
from gpucluster.config import (
    CapacityBlockCapacity,
    ClusterConfig,
    ComputeGroupConfig,
    OdcrCapacity,
)

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
    group: autoscaling.CfnAutoScalingGroup
    placement_group: ec2.CfnPlacementGroup | None

    def __init__(self, scope: Construct, id: str, props: ComputeFleetProps) -> None:
        super().__init__(scope, id)
        cfg, group = props.cfg, props.group
        self.placement_group = None
        placement_group_name = props.existing_placement_group
        if props.creates_placement_group:
            self.placement_group = ec2.CfnPlacementGroup(self, "PlacementGroup", strategy="cluster")
            placement_group_name = self.placement_group.ref
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
        template = self.launch_template.template
        self.group = autoscaling.CfnAutoScalingGroup(
            self,
            "Group",
            min_size="0" if group.is_capacity_block else str(group.count),
            max_size=str(group.count),
            desired_capacity=None if group.is_capacity_block else str(group.count),
            vpc_zone_identifier=[props.subnet_id],
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=template.ref,
                version=template.attr_latest_version_number,
            ),
            health_check_type="EC2",
            # The grace period starts once an instance is InService, i.e. after the launch
            # hook completed; the hook already covers the boot, so none is needed (EC2 Auto
            # Scaling guide, "Set the health check grace period": with launch lifecycle
            # hooks it can be 0). Tying it to the hook kept a node that failed its EC2
            # status checks after joining in service for that long.
            health_check_grace_period=0,
            lifecycle_hook_specification_list=[
                autoscaling.CfnAutoScalingGroup.LifecycleHookSpecificationProperty(
                    lifecycle_hook_name=names.LAUNCH_LIFECYCLE_HOOK,
                    lifecycle_transition="autoscaling:EC2_INSTANCE_LAUNCHING",
                    default_result="ABANDON",
                    heartbeat_timeout=LAUNCH_HOOK_TIMEOUT_SECONDS,
                )
            ],
            tags=[
                autoscaling.CfnAutoScalingGroup.TagPropertyProperty(
                    key=key, value=value, propagate_at_launch=False
                )
                for key, value in sorted(tags.items())
            ],
        )
        acknowledge(
            self.group,
            "AS3",
            "Node launches and failures are reported where operators look: Slurm node states, "
            "the launch lifecycle hook's ABANDON reason in the instance tags, and the node log group",
        )
        ssm.CfnParameter(
            self,
            "Facts",
            name=names.compute_group_parameter(cfg, group.name),
            type="String",
            description=f"gpucluster {cfg.name}: compute group {group.name} for the head node",
            value=cdk.Fn.join(
                "",
                [
                    json.dumps(self._facts_before_name(group))[:-1],
                    ', "asg_name": "',
                    self.group.ref,
                    '"}',
                ],
            ),
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

"""Login nodes: a fixed-size Auto Scaling group, so a failed node is replaced."""

from __future__ import annotations

from aws_cdk import aws_autoscaling as autoscaling
from constructs import Construct

from constructs_lib.launch_settings import ServiceNodeProps, service_node_launch_template
from constructs_lib.nag import acknowledge


class LoginNodes(Construct):
    group: autoscaling.CfnAutoScalingGroup

    def __init__(self, scope: Construct, id: str, props: ServiceNodeProps) -> None:
        super().__init__(scope, id)
        cfg = props.cfg
        template = service_node_launch_template(
            self, "LaunchTemplate", props, "login", cfg.login_nodes, groups_in_template=True
        )
        count = str(cfg.login_nodes.count)
        self.group = autoscaling.CfnAutoScalingGroup(
            self,
            "Group",
            min_size=count,
            max_size=count,
            desired_capacity=count,
            vpc_zone_identifier=[props.subnet_id],
            launch_template=autoscaling.CfnAutoScalingGroup.LaunchTemplateSpecificationProperty(
                launch_template_id=template.ref, version=template.attr_latest_version_number
            ),
            health_check_type="EC2",
        )
        acknowledge(
            self.group,
            "AS3",
            "Node launches and failures are reported where operators look: Slurm node states, "
            "the launch lifecycle hook's ABANDON reason in the instance tags, and the node log group",
        )

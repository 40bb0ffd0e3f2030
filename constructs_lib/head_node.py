"""The Slurm controller: one instance, private, reachable through Session Manager.

It is stateless by design: controller state and /home live on EFS, so
replacing this instance loses no job.
"""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from constructs_lib.launch_settings import ServiceNodeProps, service_node_launch_template
from constructs_lib.nag import acknowledge


class HeadNode(Construct):
    instance: ec2.CfnInstance

    def __init__(self, scope: Construct, id: str, props: ServiceNodeProps) -> None:
        super().__init__(scope, id)
        cfg = props.cfg
        template = service_node_launch_template(
            self, "LaunchTemplate", props, "head", cfg.head_node, groups_in_template=False
        )
        self.instance = ec2.CfnInstance(
            self,
            "Instance",
            launch_template=ec2.CfnInstance.LaunchTemplateSpecificationProperty(
                launch_template_id=template.ref, version=template.attr_latest_version_number
            ),
            subnet_id=props.subnet_id,
            security_group_ids=props.security_group_ids,
            monitoring=True,
            disable_api_termination=False,
        )
        acknowledge(
            self.instance,
            "EC29",
            "The head node is stateless (controller state and /home are on EFS), so it is "
            "meant to be replaced by a stack update; termination protection would block that",
        )

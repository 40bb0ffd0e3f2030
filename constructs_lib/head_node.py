"""The Slurm controller: one instance, private, reachable through Session Manager.

It is stateless by design: controller state and /home live on EFS, so
replacing this instance loses no job.
"""

from __future__ import annotations

from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.launch_settings import (
    ServiceNodeProps,
    launch_template_ref,
    service_node_launch_template,
)
from gpucluster.constructs_lib.nag import acknowledge


class HeadNode(Construct):
    instance: Resource

    def __init__(self, scope: Construct, id: str, props: ServiceNodeProps) -> None:
        super().__init__(scope, id)
        template = service_node_launch_template(
            self, "LaunchTemplate", props, "head", groups_in_template=False
        )
        self.instance = resource(
            self,
            "Instance",
            "AWS::EC2::Instance",
            {
                "DisableApiTermination": False,
                "LaunchTemplate": launch_template_ref(template),
                "Monitoring": True,
                "SecurityGroupIds": props.security_group_ids,
                "SubnetId": props.subnet_id,
            },
        )
        acknowledge(
            self.instance,
            "EC29",
            "The head node is stateless (controller state and /home are on EFS), so it is "
            "meant to be replaced by a stack update; termination protection would block that",
        )

"""Login nodes: a fixed-size Auto Scaling group, so a failed node is replaced."""

from __future__ import annotations

from dataclasses import dataclass

from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.launch_settings import (
    ServiceNodeProps,
    launch_template_ref,
    service_node_launch_template,
)
from gpucluster.constructs_lib.nag import acknowledge


@dataclass(frozen=True)
class LoginNodesProps:
    node: ServiceNodeProps
    count: int


class LoginNodes(Construct):
    group: Resource

    def __init__(self, scope: Construct, id: str, props: LoginNodesProps) -> None:
        super().__init__(scope, id)
        template = service_node_launch_template(
            self, "LaunchTemplate", props.node, "login", groups_in_template=True
        )
        count = str(props.count)
        self.group = resource(
            self,
            "Group",
            "AWS::AutoScaling::AutoScalingGroup",
            {
                "DesiredCapacity": count,
                "HealthCheckType": "EC2",
                "LaunchTemplate": launch_template_ref(template),
                "MaxSize": count,
                "MinSize": count,
                "VPCZoneIdentifier": [props.node.subnet_id],
            },
        )
        acknowledge(
            self.group,
            "AS3",
            "Node launches and failures are reported where operators look: Slurm node states, "
            "the launch lifecycle hook's ABANDON reason in the instance tags, and the node log group",
        )

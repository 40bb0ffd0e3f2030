"""The Slurm controller: one instance, private, reachable through Session Manager.

It is stateless by design: controller state and /home live on EFS, so
replacing this instance loses no job.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from constructs_lib.efa_launch_template import root_volume
from constructs_lib.nag import acknowledge
from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class HeadNodeProps:
    cfg: ClusterConfig
    image_id: str
    subnet_id: str
    instance_profile_arn: str
    instance_profile_name: str
    security_group_ids: list[str]
    user_data: str


def node_tags(cfg: ClusterConfig, role: str) -> list[cdk.CfnTag]:
    tags = {**cfg.tags, "gpucluster:cluster": cfg.name, "gpucluster:role": role}
    return [cdk.CfnTag(key=k, value=v) for k, v in sorted(tags.items())]


def secure_launch_data(
    *,
    image_id: str,
    instance_type: str,
    root_gib: int,
    user_data: str,
    profile_arn: str,
    tags: list[cdk.CfnTag],
    security_group_ids: list[str] | None = None,
) -> ec2.CfnLaunchTemplate.LaunchTemplateDataProperty:
    """IMDSv2-only, encrypted gp3 root: the settings every non-GPU node shares."""
    return ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
        image_id=image_id,
        instance_type=instance_type,
        iam_instance_profile=ec2.CfnLaunchTemplate.IamInstanceProfileProperty(arn=profile_arn),
        security_group_ids=security_group_ids,
        metadata_options=ec2.CfnLaunchTemplate.MetadataOptionsProperty(
            http_tokens="required",
            http_endpoint="enabled",
            http_put_response_hop_limit=2,
            instance_metadata_tags="enabled",
        ),
        block_device_mappings=[root_volume(root_gib)],
        user_data=cdk.Fn.base64(user_data),
        tag_specifications=[
            ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type=kind, tags=tags)
            for kind in ("instance", "volume")
        ],
    )


class HeadNode(Construct):
    instance: ec2.CfnInstance

    def __init__(self, scope: Construct, id: str, props: HeadNodeProps) -> None:
        super().__init__(scope, id)
        cfg = props.cfg
        template = ec2.CfnLaunchTemplate(
            self,
            "LaunchTemplate",
            launch_template_data=secure_launch_data(
                image_id=props.image_id,
                instance_type=cfg.head_node.instance_type,
                root_gib=cfg.head_node.root_volume_gib,
                user_data=props.user_data,
                profile_arn=props.instance_profile_arn,
                tags=node_tags(cfg, "head"),
            ),
        )
        self.instance = ec2.CfnInstance(
            self,
            "Instance",
            launch_template=ec2.CfnInstance.LaunchTemplateSpecificationProperty(
                launch_template_id=template.ref, version=template.attr_latest_version_number
            ),
            subnet_id=props.subnet_id,
            security_group_ids=props.security_group_ids,
            iam_instance_profile=props.instance_profile_name,
            monitoring=True,
            disable_api_termination=False,
        )
        acknowledge(
            self.instance,
            "EC29",
            "The head node is stateless (controller state and /home are on EFS), so it is "
            "meant to be replaced by a stack update; termination protection would block that",
        )

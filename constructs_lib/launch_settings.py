"""Launch-template settings every node shares: IMDSv2 only, an encrypted gp3 root, tags."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from gpucluster import names
from gpucluster.config import ClusterConfig, HeadNodeConfig, LoginNodesConfig


@dataclass(frozen=True)
class ServiceNodeProps:
    """What the head node and the login nodes are built from."""

    cfg: ClusterConfig
    image_id: str
    subnet_id: str
    instance_profile_arn: str
    security_group_ids: list[str]
    user_data: str


def node_tags(cfg: ClusterConfig, role: str, **extra: str) -> dict[str, str]:
    return {**cfg.tags, names.CLUSTER_TAG: cfg.name, names.ROLE_TAG: role, **extra}


def cfn_tags(tags: dict[str, str]) -> list[cdk.CfnTag]:
    return [cdk.CfnTag(key=key, value=value) for key, value in sorted(tags.items())]


def imds_v2_only() -> ec2.CfnLaunchTemplate.MetadataOptionsProperty:
    # Hop limit 2 lets containers on the node reach instance metadata;
    # instance tags in metadata give the bootstrap its Auto Scaling group name.
    return ec2.CfnLaunchTemplate.MetadataOptionsProperty(
        http_tokens="required",
        http_endpoint="enabled",
        http_put_response_hop_limit=2,
        instance_metadata_tags="enabled",
    )


def root_volume(size_gib: int) -> ec2.CfnLaunchTemplate.BlockDeviceMappingProperty:
    return ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
        device_name="/dev/sda1",
        ebs=ec2.CfnLaunchTemplate.EbsProperty(
            volume_size=size_gib,
            volume_type="gp3",
            encrypted=True,
            delete_on_termination=True,
        ),
    )


def service_node_launch_template(
    scope: Construct,
    id: str,
    props: ServiceNodeProps,
    role: str,
    node: HeadNodeConfig | LoginNodesConfig,
    *,
    groups_in_template: bool,
) -> ec2.CfnLaunchTemplate:
    """Launch template of a head or login node (no EFA, one primary interface).

    An Auto Scaling group takes its security groups from the template
    (`groups_in_template`); a standalone instance sets them itself.
    """
    tags = cfn_tags(node_tags(props.cfg, role))
    return ec2.CfnLaunchTemplate(
        scope,
        id,
        launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            image_id=props.image_id,
            instance_type=node.instance_type,
            iam_instance_profile=ec2.CfnLaunchTemplate.IamInstanceProfileProperty(
                arn=props.instance_profile_arn
            ),
            security_group_ids=props.security_group_ids if groups_in_template else None,
            metadata_options=imds_v2_only(),
            block_device_mappings=[root_volume(node.root_volume_gib)],
            user_data=cdk.Fn.base64(props.user_data),
            tag_specifications=[
                ec2.CfnLaunchTemplate.TagSpecificationProperty(resource_type=kind, tags=tags)
                for kind in ("instance", "volume")
            ],
        ),
    )

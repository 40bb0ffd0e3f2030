"""Launch-template settings every node shares: IMDSv2 only, an encrypted gp3 root, tags."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from constructs import Construct

from constructs_lib.cfn import Resource, resource
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


def tag_specifications(tags: dict[str, str], kinds: tuple[str, ...]) -> list[dict[str, Any]]:
    """`LaunchTemplateData.TagSpecifications`: the same tags on each kind of resource launched."""
    tag_list = [{"Key": key, "Value": value} for key, value in sorted(tags.items())]
    return [{"ResourceType": kind, "Tags": tag_list} for kind in kinds]


def imds_v2_only() -> dict[str, Any]:
    # Hop limit 2 lets containers on the node reach instance metadata;
    # instance tags in metadata give the bootstrap its Auto Scaling group name.
    return {
        "HttpEndpoint": "enabled",
        "HttpPutResponseHopLimit": 2,
        "HttpTokens": "required",
        "InstanceMetadataTags": "enabled",
    }


def root_volume(size_gib: int) -> dict[str, Any]:
    ebs = {"DeleteOnTermination": True, "Encrypted": True, "VolumeSize": size_gib, "VolumeType": "gp3"}
    return {"DeviceName": "/dev/sda1", "Ebs": ebs}


def launch_template_ref(template: Resource) -> dict[str, str]:
    """An instance's or Auto Scaling group's `LaunchTemplate`: the template's latest version."""
    return {"LaunchTemplateId": template.ref_token, "Version": template.att("LatestVersionNumber")}


def service_node_launch_template(
    scope: Construct,
    id: str,
    props: ServiceNodeProps,
    role: str,
    node: HeadNodeConfig | LoginNodesConfig,
    *,
    groups_in_template: bool,
) -> Resource:
    """Launch template of a head or login node (no EFA, one primary interface).

    An Auto Scaling group takes its security groups from the template
    (`groups_in_template`); a standalone instance sets them itself.
    """
    data: dict[str, Any] = {
        "BlockDeviceMappings": [root_volume(node.root_volume_gib)],
        "IamInstanceProfile": {"Arn": props.instance_profile_arn},
        "ImageId": props.image_id,
        "InstanceType": node.instance_type,
        "MetadataOptions": imds_v2_only(),
        "TagSpecifications": tag_specifications(node_tags(props.cfg, role), ("instance", "volume")),
        "UserData": {"Fn::Base64": props.user_data},
    }
    if groups_in_template:
        data["SecurityGroupIds"] = props.security_group_ids
    return resource(scope, id, "AWS::EC2::LaunchTemplate", {"LaunchTemplateData": data})

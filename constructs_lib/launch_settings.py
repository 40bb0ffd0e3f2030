"""Launch-template settings every node shares: IMDSv2 only, an encrypted gp3 root, tags."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.efa import InterfaceSlot

# IMDS answers one hop away: the node's own processes and its Enroot/Pyxis containers, which
# share the node's network namespace, but not a container behind a bridge (Docker's), one hop
# further. Which of the node's users may ask is the bootstrap's (gpucluster.bootstrap.metadata_guard).
NODE_METADATA_HOPS = 1
# EKS pods have network namespaces of their own, one hop further, and the EBS CSI driver's node
# pods read their instance, zone and attachable volume count from IMDS (its install guide asks
# for a hop limit of 2 with IMDSv2; the Kubernetes fallback miscounts the ENIs of a GPU node).
POD_METADATA_HOPS = 2


@dataclass(frozen=True)
class ServiceNodeProps:
    """What the head node and the login nodes are built from."""

    instance_type: str
    root_volume_gib: int
    image_id: str
    subnet_id: str
    instance_profile_arn: str
    security_group_ids: list[str]
    user_data: str
    # The cluster's tags (the user's and its name), to which node_tags adds the role.
    cluster_tags: Mapping[str, str]


def node_tags(cluster_tags: Mapping[str, str], role: str, **extra: str) -> dict[str, str]:
    """A node's tags: the cluster's (the user's and its name), its role, and `extra`."""
    return {**cluster_tags, names.ROLE_TAG: role, **extra}


@dataclass(frozen=True)
class GpuLaunch:
    """What only a GPU node's template says: every interface of its layout (each in
    `interface_groups`), how it is bought, where it is placed."""

    interfaces: list[InterfaceSlot]
    interface_groups: list[str]
    market_type: str | None
    reservation_id: str | None
    placement_group_name: str | None


@dataclass(frozen=True)
class NodeLaunch:
    """A node's launch template. Every node gets IMDSv2 only, an encrypted gp3 root and its
    `tags` on each kind of resource it launches (`tagged`)."""

    # None for image, profile and user data: an EKS managed node group supplies its own (it
    # refuses a template with an instance profile, and merges its bootstrap into user data).
    image_id: str | None
    instance_type: str
    instance_profile_arn: str | None
    root_volume_gib: int
    user_data: str | None
    tags: dict[str, str]
    tagged: tuple[str, ...]
    # In the template when an Auto Scaling group launches the node; a standalone
    # instance sets its own.
    security_group_ids: list[str] | None = None
    gpu: GpuLaunch | None = None
    # The image's root device: Ubuntu's DLAMI boots from /dev/sda1, the EKS AL2023 AMIs from /dev/xvda.
    root_device_name: str = "/dev/sda1"
    metadata_hops: int = NODE_METADATA_HOPS


def node_launch_template(scope: Construct, id: str, launch: NodeLaunch) -> Resource:
    """The AWS::EC2::LaunchTemplate of `launch`: the one place its data is written."""
    tag_list = [{"Key": key, "Value": value} for key, value in sorted(launch.tags.items())]
    root = {
        "DeleteOnTermination": True,
        "Encrypted": True,
        "VolumeSize": launch.root_volume_gib,
        "VolumeType": "gp3",
    }
    data: dict[str, Any] = {"BlockDeviceMappings": [{"DeviceName": launch.root_device_name, "Ebs": root}]}
    if launch.instance_profile_arn is not None:
        data["IamInstanceProfile"] = {"Arn": launch.instance_profile_arn}
    if launch.image_id is not None:
        data["ImageId"] = launch.image_id
    data |= {
        "InstanceType": launch.instance_type,
        # Instance tags in metadata give the bootstrap its Auto Scaling group name.
        "MetadataOptions": {
            "HttpEndpoint": "enabled",
            "HttpPutResponseHopLimit": launch.metadata_hops,
            "HttpTokens": "required",
            "InstanceMetadataTags": "enabled",
        },
        "TagSpecifications": [{"ResourceType": kind, "Tags": tag_list} for kind in launch.tagged],
    }
    if launch.user_data is not None:
        data["UserData"] = {"Fn::Base64": launch.user_data}
    if launch.security_group_ids is not None:
        data["SecurityGroupIds"] = launch.security_group_ids
    gpu = launch.gpu
    if gpu is not None:
        data["EbsOptimized"] = True
        data["NetworkInterfaces"] = [
            {
                "DeleteOnTermination": True,
                "DeviceIndex": slot.device_index,
                "Groups": gpu.interface_groups,
                "NetworkCardIndex": slot.network_card_index,
            }
            | ({} if slot.interface_type == "interface" else {"InterfaceType": slot.interface_type})
            for slot in gpu.interfaces
        ]
        if gpu.market_type is not None:
            data["InstanceMarketOptions"] = {"MarketType": gpu.market_type}
        if gpu.reservation_id is not None:
            target = {"CapacityReservationId": gpu.reservation_id}
            data["CapacityReservationSpecification"] = {"CapacityReservationTarget": target}
        if gpu.placement_group_name:
            data["Placement"] = {"GroupName": gpu.placement_group_name}
    return resource(scope, id, "AWS::EC2::LaunchTemplate", {"LaunchTemplateData": data})


def launch_template_ref(template: Resource) -> dict[str, str]:
    """An instance's or Auto Scaling group's `LaunchTemplate`: the template's latest version."""
    return {"LaunchTemplateId": template.ref_token, "Version": template.att("LatestVersionNumber")}


def service_node_launch_template(
    scope: Construct,
    id: str,
    props: ServiceNodeProps,
    role: str,
    *,
    groups_in_template: bool,
) -> Resource:
    """Launch template of a head or login node (no EFA, one primary interface).

    An Auto Scaling group takes its security groups from the template
    (`groups_in_template`); a standalone instance sets them itself.
    """
    launch = NodeLaunch(
        image_id=props.image_id,
        instance_type=props.instance_type,
        instance_profile_arn=props.instance_profile_arn,
        root_volume_gib=props.root_volume_gib,
        user_data=props.user_data,
        tags=node_tags(props.cluster_tags, role),
        tagged=("instance", "volume"),
        security_group_ids=props.security_group_ids if groups_in_template else None,
    )
    return node_launch_template(scope, id, launch)

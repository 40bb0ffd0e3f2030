"""One compute group as an EKS managed node group on the group's own EFA launch template.

The launch template is the EC2 path's (gpucluster.constructs_lib.efa_launch_template), so
every EFA card is wired the same way, and a Capacity Block is targeted the same way (market
type capacity-block and the block's reservation id: EKS user guide, "Create a managed node
group with Capacity Blocks for ML"); the node group adds capacity type CAPACITY_BLOCK. The
template leaves out image, instance profile and user data: the node group boots the EKS
accelerated AMI with its own bootstrap and role. Its interfaces carry the EKS cluster security
group too, since a template that lists security groups replaces the one EKS would add.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.compute_fleet import CAPACITY_BLOCK, capacity_target
from gpucluster.constructs_lib.efa_launch_template import EfaLaunchTemplate, EfaLaunchTemplateProps
from gpucluster.constructs_lib.launch_settings import POD_METADATA_HOPS, node_tags
from gpucluster.efa import InterfaceSlot
from gpucluster.eks.labels import compute_group_labels, compute_group_taints

# The AL2023 AMIs' root device.
AL2023_ROOT_DEVICE = "/dev/xvda"


@dataclass(frozen=True)
class GpuNodeGroupProps:
    cluster: eks.ICluster
    cluster_tags: Mapping[str, str]
    group: str
    instance_type: str
    count: int
    # on-demand, odcr or capacity-block, and the reservation's id (None on demand).
    capacity_type: str
    reservation_id: str | None
    interfaces: tuple[InterfaceSlot, ...]
    root_volume_gib: int
    # Every interface's groups: the EKS cluster's, the nodes' and the EFA group.
    security_group_ids: list[str]
    subnet: ec2.ISubnet
    node_role: iam.IRole


class GpuNodeGroup(Construct):
    launch_template: EfaLaunchTemplate
    node_group: eks.Nodegroup

    def __init__(self, scope: Construct, id: str, props: GpuNodeGroupProps) -> None:
        super().__init__(scope, id)
        capacity_block = props.capacity_type == CAPACITY_BLOCK
        self.launch_template = EfaLaunchTemplate(
            self,
            "LaunchTemplate",
            EfaLaunchTemplateProps(
                instance_type=props.instance_type,
                interfaces=props.interfaces,
                image_id=None,
                instance_profile_arn=None,
                security_group_ids=props.security_group_ids,
                user_data=None,
                root_volume_gib=props.root_volume_gib,
                capacity=capacity_target(props.capacity_type, props.reservation_id),
                placement_group_name=None,
                tags=node_tags(props.cluster_tags, "compute", **{names.GROUP_TAG: props.group}),
                root_device_name=AL2023_ROOT_DEVICE,
                metadata_hops=POD_METADATA_HOPS,
            ),
        )
        template = self.launch_template.template
        # A Capacity Block group starts at zero: EC2 refuses launches before the block is
        # active, and AWS advises scaling to zero 30 minutes before it ends.
        self.node_group = eks.Nodegroup(
            self,
            "NodeGroup",
            cluster=props.cluster,
            nodegroup_name=f"{props.cluster_tags[names.CLUSTER_TAG]}-{props.group}",
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_NVIDIA,
            capacity_type=eks.CapacityType.CAPACITY_BLOCK if capacity_block else eks.CapacityType.ON_DEMAND,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=template.ref_token, version=template.att("LatestVersionNumber")
            ),
            min_size=0 if capacity_block else props.count,
            desired_size=0 if capacity_block else props.count,
            max_size=props.count,
            # An update drains nodes and respects PodDisruptionBudgets; never force a running
            # training job's node away.
            force_update=False,
            subnets=ec2.SubnetSelection(subnets=[props.subnet]),
            node_role=props.node_role,
            # The Slinky NodeSet selects and tolerates exactly these (gpucluster.eks.labels).
            labels=compute_group_labels(props.group),
            taints=[
                eks.TaintSpec(effect=eks.TaintEffect(taint.eks_effect), key=taint.key, value=taint.value)
                for taint in compute_group_taints(props.group)
            ],
            tags=dict(props.cluster_tags),
        )

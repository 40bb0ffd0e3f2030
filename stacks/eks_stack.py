"""EKS (stateless, replaceable): the EKS cluster in the Network stack's VPC, its system node
group, one managed node group per compute group and the pinned add-ons; Helm releases added
with `add_helm_release` when the stack is built `with_kubectl`.

Like the Cluster stack on EC2 it reads the retained Storage stack's facts from SSM parameters
(`fsx_facts`), never from exports, so deleting this stack leaves the data and its stack alone.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from gpucluster.agents.nodegroup_settings import BlockNodeGroup
from gpucluster.constructs_lib.compute_fleet import CAPACITY_BLOCK
from gpucluster.constructs_lib.eks.add_ons import add_ons
from gpucluster.constructs_lib.eks.block_scaler import BlockScaler, BlockScalerProps
from gpucluster.constructs_lib.eks.kubectl import (
    acknowledge_kubectl_provider,
    kubectl_provider_options,
    place_kubectl_provider,
)
from gpucluster.constructs_lib.eks.node_groups import AL2023_ROOT_DEVICE, GpuNodeGroup, GpuNodeGroupProps
from gpucluster.constructs_lib.eks.topology_writer import TopologyWriter
from gpucluster.constructs_lib.eks.versions import KUBERNETES_VERSION, SYSTEM_INSTANCE_TYPE, SYSTEM_NODE_COUNT
from gpucluster.constructs_lib.launch_settings import (
    POD_METADATA_HOPS,
    NodeLaunch,
    node_launch_template,
    node_tags,
)
from gpucluster.constructs_lib.nag import acknowledge
from gpucluster.eks.labels import system_labels
from gpucluster.eks.storage import FsxFacts
from gpucluster.resolved import ResolvedCluster
from gpucluster.resolved.groups import ResolvedGroup

NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly", "AmazonEKS_CNI_Policy")
SYSTEM_ROOT_GIB = 100


@dataclass(frozen=True)
class HelmRelease:
    """A chart from a directory in this repository, installed by CDK with `values` (through
    the kubectl provider, which exists only when there is a release to install). It deploys as
    an asset with `subcharts` copied into its charts/: helm refuses a chart whose dependencies
    are missing there, even disabled ones."""

    id: str
    chart_dir: Path
    release: str
    namespace: str
    values: Mapping[str, Any] = field(default_factory=dict)
    subcharts: tuple[Path, ...] = ()


class EksStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        resolved: ResolvedCluster,
        vpc_id: str,
        subnet_id: str,
        control_plane_subnet_ids: Sequence[str],
        nodes_security_group_id: str,
        efa_security_group_id: str,
        with_kubectl: bool = False,
        **kwargs: Any,  # cdk.StackProps keywords (env, description, ...)
    ) -> None:
        super().__init__(scope, id, **kwargs)
        self._resolved = resolved
        self._fsx: FsxFacts | None = None
        zone = resolved.network.availability_zone
        vpc = ec2.Vpc.from_vpc_attributes(self, "Vpc", vpc_id=vpc_id, availability_zones=[zone])
        node_subnet = ec2.Subnet.from_subnet_attributes(
            self, "NodeSubnet", subnet_id=subnet_id, availability_zone=zone
        )
        control_plane = [
            ec2.Subnet.from_subnet_id(self, f"ControlPlaneSubnet{index}", subnet)
            for index, subnet in enumerate(control_plane_subnet_ids, start=1)
        ]
        # aws_eks_v2 needs a kubectl provider only to apply manifests and charts through
        # CloudFormation; without releases there is none.
        kubectl = kubectl_provider_options(self) if with_kubectl else None
        self.cluster = eks.Cluster(
            self,
            "Cluster",
            cluster_name=resolved.name,
            version=eks.KubernetesVersion.of(KUBERNETES_VERSION),
            default_capacity=0,
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            vpc=vpc,
            vpc_subnets=[ec2.SubnetSelection(subnets=control_plane)],
            cluster_logging=list(eks.ClusterLoggingTypes),
            kubectl_provider_options=kubectl,
            output_config_command=True,
            tags=dict(resolved.tags),
        )
        # The jsii typings of aws_eks_v2.Cluster lack ICluster's kubectl_provider_options
        # property (the JavaScript class has it), so mypy needs telling.
        cluster = cast(eks.ICluster, self.cluster)
        acknowledge(
            self.cluster,
            "EKS1",
            "The API endpoint is public (and private) so `aws eks update-kubeconfig` and kubectl work "
            "from a workstation; every call is authenticated by IAM and authorized by access entries",
        )
        acknowledge(
            self.cluster,
            "IAM4",
            "EKS's own service policy for the control plane role, maintained by AWS for the service",
            findings=("Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy",),
        )
        self.node_role = iam.Role(
            self,
            "NodeRole",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(p) for p in NODE_POLICIES],
            description=f"gpucluster {resolved.name}: EKS nodes "
            "(join the cluster, pull images, pod networking)",
        )
        acknowledge(
            self.node_role,
            "IAM4",
            'The policies EKS requires on a node role (EKS user guide, "Amazon EKS node IAM role"), '
            "kept current by AWS with the kubelet's and the VPC CNI's needs",
            findings=tuple(f"Policy::arn:<AWS::Partition>:iam::aws:policy/{p}" for p in NODE_POLICIES),
        )
        cluster_group = self.cluster.cluster_security_group_id
        self._system_group(cluster, node_subnet, [cluster_group, nodes_security_group_id])
        self.add_ons = add_ons(self, cluster, self.system_node_group)
        self.node_groups = {
            group.name: GpuNodeGroup(
                self,
                f"Compute-{group.name}",
                GpuNodeGroupProps(
                    cluster=cluster,
                    cluster_tags=resolved.tags,
                    group=group.name,
                    instance_type=group.instance.name,
                    count=group.count,
                    capacity_type=group.capacity_type,
                    reservation_id=group.reservation_id,
                    interfaces=group.interfaces,
                    root_volume_gib=group.root_volume_gib,
                    security_group_ids=[cluster_group, nodes_security_group_id, efa_security_group_id],
                    subnet=node_subnet,
                    node_role=self.node_role,
                ),
            )
            for group in resolved.groups
        }
        # No head node runs the EC2 path's capacity controller here: a scheduled function sizes
        # the Capacity Block node groups by the same decision.
        self.block_scaler = add_block_scaler(
            self,
            cluster,
            [(group, self.node_groups[group.name].node_group) for group in resolved.groups],
            resolved.tags,
        )
        # Nor the EC2 path's topology timer: a scheduled function places the compute nodes.
        self.topology_writer = TopologyWriter(self, "TopologyWriter", self.cluster, resolved.tags)
        self._last_release: Construct | None = None
        if with_kubectl:
            place_kubectl_provider(self.cluster, subnet_id)
            acknowledge_kubectl_provider(self.cluster, self.region)

    def add_helm_release(self, release: HelmRelease) -> eks.HelmChart:
        """Install `release` after everything added before it (CRDs first, then the
        operator, then what it serves). Only on a stack built with_kubectl."""
        if self.cluster.kubectl_provider is None:
            raise ValueError("add_helm_release needs an EksStack built with_kubectl=True")
        chart = eks.HelmChart(
            self,
            release.id,
            cluster=cast(eks.ICluster, self.cluster),
            chart_asset=self._chart_asset(release.id, release.chart_dir, release.subcharts),
            release=release.release,
            namespace=release.namespace,
            create_namespace=True,
            values=dict(release.values),
            wait=True,
        )
        self.add_step(chart)
        return chart

    def add_manifest(self, id: str, documents: Sequence[Mapping[str, Any]]) -> eks.KubernetesManifest:
        """Apply `documents` (tokens allowed) after everything added before it."""
        manifest = eks.KubernetesManifest(
            self,
            id,
            cluster=cast(eks.ICluster, self.cluster),
            manifest=[dict(doc) for doc in documents],
            # apply, not create: a retried deploy finds them there already.
            overwrite=True,
        )
        self.add_step(manifest)
        return manifest

    def add_step(self, construct: Construct) -> None:
        """Deploy `construct` after everything added before it and before what comes after
        (add_helm_release and add_manifest call it; a custom resource in the chain too)."""
        # The first waits for the nodes and add-ons its pods need (helm --wait would time out
        # with no node or no pod network); each later one for the one before.
        first = [self.system_node_group, *self.add_ons.values()]
        for previous in [self._last_release] if self._last_release else first:
            construct.node.add_dependency(previous)
        self._last_release = construct

    def _chart_asset(self, id: str, chart: Path, subcharts: Sequence[Path]) -> s3_assets.Asset:
        """The chart directory as an S3 asset, its subcharts copied into its charts/. The asset
        is staged into the cloud assembly as the Asset is built, so the copy can go after."""
        if not subcharts:
            return s3_assets.Asset(self, f"{id}Chart", path=str(chart))
        with tempfile.TemporaryDirectory(prefix="gpucluster-chart-") as staging:
            staged = Path(staging) / chart.name
            shutil.copytree(chart, staged)
            for subchart in subcharts:
                shutil.copytree(subchart, staged / "charts" / subchart.name)
            return s3_assets.Asset(self, f"{id}Chart", path=str(staged))

    def _system_group(
        self, cluster: eks.ICluster, subnet: ec2.ISubnet, security_group_ids: list[str]
    ) -> None:
        launch = NodeLaunch(
            image_id=None,
            instance_type=SYSTEM_INSTANCE_TYPE,
            instance_profile_arn=None,
            root_volume_gib=SYSTEM_ROOT_GIB,
            user_data=None,
            tags=node_tags(self._resolved.tags, "system"),
            tagged=("instance", "volume"),
            # The nodes' group as well as the cluster's: login pods mount FSx for Lustre.
            security_group_ids=security_group_ids,
            root_device_name=AL2023_ROOT_DEVICE,
            metadata_hops=POD_METADATA_HOPS,
        )
        template = node_launch_template(self, "SystemLaunchTemplate", launch)
        self.system_node_group = eks.Nodegroup(
            self,
            "SystemNodeGroup",
            cluster=cluster,
            nodegroup_name=f"{self._resolved.name}-system",
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            capacity_type=eks.CapacityType.ON_DEMAND,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=template.ref_token, version=template.att("LatestVersionNumber")
            ),
            min_size=SYSTEM_NODE_COUNT,
            desired_size=SYSTEM_NODE_COUNT,
            max_size=SYSTEM_NODE_COUNT,
            subnets=ec2.SubnetSelection(subnets=[subnet]),
            node_role=self.node_role,
            labels=system_labels(),
            tags=dict(self._resolved.tags),
        )

    def fsx_facts(self) -> FsxFacts:
        """The Storage stack's FSx for Lustre, read from its SSM parameters at deploy (a static
        PersistentVolume's volumeHandle, dnsname and mountname). Call only when the config has
        storage.fsx_lustre; later calls return the same tokens."""
        if self._fsx is None:
            parameters = self._resolved.names.storage_parameters
            dns = ssm.StringParameter.value_for_string_parameter(self, parameters["fsx_dns_name"])
            mount = ssm.StringParameter.value_for_string_parameter(self, parameters["fsx_mount_name"])
            self._fsx = FsxFacts(
                # fs-0123....fsx.REGION.amazonaws.com: the id is the name's first label.
                file_system_id=cdk.Fn.select(0, cdk.Fn.split(".", dns)),
                dns_name=dns,
                mount_name=mount,
            )
        return self._fsx


def eks_stack_name(resolved: ResolvedCluster) -> str:
    return f"{resolved.name}-eks"


def _name(node_group: eks.Nodegroup) -> str:
    """The node group's own name. Nodegroup.nodegroup_name is the resource's Ref, which
    CloudFormation answers with "<cluster>/<node group>" (aws-cdk issue 22442)."""
    return cast(eks.CfnNodegroup, node_group.node.default_child).attr_nodegroup_name


def add_block_scaler(
    scope: Construct,
    cluster: eks.ICluster,
    groups: Sequence[tuple[ResolvedGroup, eks.Nodegroup]],
    tags: Mapping[str, str],
) -> BlockScaler | None:
    """The scaler for the Capacity Block groups among `groups`; None when there is none."""
    blocks = [
        (
            BlockNodeGroup(group.name, _name(node_group), group.count, group.reservation_id),
            node_group,
        )
        for group, node_group in groups
        if group.capacity_type == CAPACITY_BLOCK and group.reservation_id is not None
    ]
    if not blocks:
        return None
    return BlockScaler(scope, "BlockScaler", BlockScalerProps(cluster.cluster_name, blocks, tags))

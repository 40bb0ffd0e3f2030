"""Cluster (stateless, replaceable): roles, bundle, head, login, compute fleets, DNS.

It reads storage facts at boot from SSM parameters, not from Storage stack
exports, so replacing or deleting this stack never pins or touches the data.
"""

from __future__ import annotations

from typing import Any, Literal

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names
from gpucluster.bootstrap.userdata import BundleRef, render_user_data
from gpucluster.config import ClusterConfig
from gpucluster.infra.constructs.bootstrap_bundle import BootstrapBundle, BootstrapBundleProps, SlurmSource
from gpucluster.infra.constructs.cfn import string_parameter
from gpucluster.infra.constructs.cluster_dns import ClusterDns, ClusterDnsProps
from gpucluster.infra.constructs.compute_fleet import ComputeFleet, ComputeFleetProps
from gpucluster.infra.constructs.head_node import HeadNode
from gpucluster.infra.constructs.launch_settings import ServiceNodeProps
from gpucluster.infra.constructs.login_nodes import LoginNodes
from gpucluster.infra.constructs.node_image import node_image_id
from gpucluster.infra.constructs.node_logs import NodeLogs, NodeLogsProps
from gpucluster.infra.constructs.node_roles import NodeRoles, NodeRolesProps


class ClusterStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: ClusterConfig,
        vpc_id: str,
        subnet_id: str,
        nodes_security_group_id: str,
        efa_security_group_id: str,
        **kwargs: Any,  # cdk.StackProps keywords (env, description, ...)
    ) -> None:
        super().__init__(scope, id, **kwargs)
        image_id = node_image_id(self, cfg.image)
        bundle = BootstrapBundle(self, "Bootstrap", BootstrapBundleProps(cfg=cfg))
        slurm_source = SlurmSource(self, "SlurmSource")
        node_logs = NodeLogs(self, "NodeLogs", NodeLogsProps(cfg=cfg))
        roles = NodeRoles(
            self,
            "Roles",
            NodeRolesProps(
                cfg=cfg,
                bundle_bucket_arn=bundle.bucket_arn,
                bundle_object_key=bundle.object_key,
                slurm_source_object_key=slurm_source.object_key,
                log_group_arn=node_logs.log_group_arn,
            ),
        )
        # The head finds the bundle through this parameter, not its user data: a new bundle
        # updates the parameter in place and the head's update timer applies it.
        bundle_pointer = string_parameter(
            self,
            "BundlePointer",
            name=names.bundle_parameter(cfg),
            value=bundle.ref.pointer,
            description="sha256 and S3 URL of the current bootstrap bundle; the head node polls it",
        )

        def service_node(role: Literal["head", "login"], bundle_ref: BundleRef | None) -> ServiceNodeProps:
            return ServiceNodeProps(
                cfg=cfg,
                image_id=image_id,
                subnet_id=subnet_id,
                instance_profile_arn=roles.instance_profiles[role].att("Arn"),
                security_group_ids=[nodes_security_group_id],
                user_data=render_user_data(cfg, role, bundle_ref),
            )

        # Where the head records the AMI id and kernel it booted (record_head_image). The stack
        # owns it so it goes with the cluster. CloudFormation writes the placeholder only when
        # it creates the parameter (its properties never change), so the head's value stays.
        # It exists before the head boots and before a new bundle is published: a head that
        # wrote it first would make its creation fail.
        head_image = string_parameter(
            self,
            "HeadImageRecord",
            name=names.head_image_parameter(cfg),
            value=names.HEAD_IMAGE_NOT_RECORDED,
            description="AMI id and kernel the head node booted; gpucluster ami pin --kernel-from-cluster",
        )
        bundle_pointer.node.add_dependency(head_image)
        head = HeadNode(self, names.HEAD_NODE_ID, service_node("head", None))
        head.instance.node.add_dependency(bundle_pointer)
        head.instance.node.add_dependency(head_image)
        ClusterDns(
            self,
            "Dns",
            ClusterDnsProps(cfg=cfg, vpc_id=vpc_id, head_node_private_ip=head.instance.att("PrivateIp")),
        )
        if cfg.login_nodes.count > 0:
            LoginNodes(self, "LoginNodes", service_node("login", bundle.ref))
        for group in cfg.compute_groups:
            ComputeFleet(
                self,
                f"Compute-{group.name}",
                ComputeFleetProps(
                    cfg=cfg,
                    group=group,
                    image_id=image_id,
                    subnet_id=subnet_id,
                    instance_profile_arn=roles.instance_profiles["compute"].att("Arn"),
                    security_group_ids=[nodes_security_group_id, efa_security_group_id],
                    user_data=render_user_data(cfg, "compute", bundle.ref, group),
                    creates_placement_group=group.creates_placement_group,
                    existing_placement_group=group.existing_placement_group,
                ),
            )

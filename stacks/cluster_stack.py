"""Cluster (stateless, replaceable): roles, bundle, head, login, compute fleets, DNS.

It reads storage facts at boot from SSM parameters, not from Storage stack
exports, so replacing or deleting this stack never pins or touches the data.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names
from gpucluster.constructs_lib.bootstrap_bundle import (
    BootstrapBundle,
    BootstrapBundleProps,
    SlurmSource,
    SlurmSourceProps,
)
from gpucluster.constructs_lib.cfn import string_parameter
from gpucluster.constructs_lib.cluster_dns import ClusterDns, ClusterDnsProps
from gpucluster.constructs_lib.compute_fleet import ComputeFleet, ComputeFleetProps
from gpucluster.constructs_lib.head_node import HeadNode
from gpucluster.constructs_lib.launch_settings import ServiceNodeProps, node_tags
from gpucluster.constructs_lib.login_nodes import LoginNodes, LoginNodesProps
from gpucluster.constructs_lib.node_image import node_image_id
from gpucluster.constructs_lib.node_logs import NodeLogs, NodeLogsProps
from gpucluster.constructs_lib.node_roles import NodeRoles, NodeRolesProps
from gpucluster.constructs_lib.user_sessions import UserSessions, UserSessionsProps
from gpucluster.node_files import NodeFiles, with_bundle_url
from gpucluster.resolved import ResolvedCluster


class ClusterStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        resolved: ResolvedCluster,
        node_files: NodeFiles,
        vpc_id: str,
        subnet_id: str,
        nodes_security_group_id: str,
        efa_security_group_id: str,
        head_security_group_id: str,
        **kwargs: Any,  # cdk.StackProps keywords (env, description, ...)
    ) -> None:
        super().__init__(scope, id, **kwargs)
        named = resolved.names
        image_id = node_image_id(self, resolved.image.ami_id, resolved.image.ssm_parameter)
        bundle = BootstrapBundle(
            self,
            "Bootstrap",
            BootstrapBundleProps(archive=node_files.bundle, sha256=node_files.bundle_sha256),
        )
        slurm = resolved.slurm
        slurm_source = SlurmSource(
            self,
            "SlurmSource",
            SlurmSourceProps(
                tarball=slurm.source_tarball, sha256=slurm.source_sha256, object_key=slurm.source_object_key
            ),
        )
        node_logs = NodeLogs(
            self,
            "NodeLogs",
            NodeLogsProps(
                cluster=resolved.name,
                agent_config=node_files.log_agent_config,
                agent_config_parameter=named.log_agent_config_parameter,
                retention_days=node_files.log_retention_days,
            ),
        )
        database = resolved.accounting.database if resolved.accounting is not None else None
        roles = NodeRoles(
            self,
            "Roles",
            NodeRolesProps(
                cluster=resolved.name,
                region=resolved.region,
                account=resolved.account,
                parameter_prefix=named.parameter_prefix,
                munge_secret_name_pattern=named.munge_secret_name_pattern,
                munge_secret_arn=resolved.accounting.munge_key_secret_arn if resolved.accounting else None,
                accounting_db_secret_name_pattern=database.secret_name_pattern if database else None,
                rest_api_jwt_secret_name_pattern=resolved.rest_api.jwt_secret_name_pattern
                if resolved.rest_api
                else None,
                head_image_parameter=named.head_image_parameter,
                role_name_prefix=named.role_name_prefix,
                ecr_repository_arns=resolved.ecr_repository_arns,
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
            name=named.bundle_parameter,
            value=with_bundle_url(node_files.bundle_pointer, bundle.url),
            description="sha256 and S3 URL of the current bootstrap bundle; the head node polls it",
        )

        def service_node(
            role: str, instance_type: str, root_volume_gib: int, user_data: str
        ) -> ServiceNodeProps:
            return ServiceNodeProps(
                instance_type=instance_type,
                root_volume_gib=root_volume_gib,
                image_id=image_id,
                subnet_id=subnet_id,
                instance_profile_arn=roles.instance_profiles[role].att("Arn"),
                security_group_ids=[nodes_security_group_id]
                + ([head_security_group_id] if role == "head" else []),
                user_data=user_data,
                cluster_tags=resolved.tags,
            )

        # Where the head records the AMI id and kernel it booted (record_head_image). The stack
        # owns it so it goes with the cluster. CloudFormation writes the placeholder only when
        # it creates the parameter (its properties never change), so the head's value stays.
        # It exists before the head boots and before a new bundle is published: a head that
        # wrote it first would make its creation fail.
        head_image = string_parameter(
            self,
            "HeadImageRecord",
            name=named.head_image_parameter,
            value=names.HEAD_IMAGE_NOT_RECORDED,
            description="AMI id and kernel the head node booted; gpucluster ami pin --kernel-from-cluster",
        )
        bundle_pointer.node.add_dependency(head_image)
        head_node = resolved.head_node
        head = HeadNode(
            self,
            names.HEAD_NODE_ID,
            service_node(
                "head", head_node.instance_type, head_node.root_volume_gib, node_files.head_user_data
            ),
        )
        head.instance.node.add_dependency(bundle_pointer)
        head.instance.node.add_dependency(head_image)
        ClusterDns(
            self,
            "Dns",
            ClusterDnsProps(
                cluster=resolved.name,
                region=resolved.region,
                zone_name=named.private_zone,
                controller_host=named.controller_host,
                slurmctld_port=node_files.slurmctld_port,
                vpc_id=vpc_id,
                head_node_private_ip=head.instance.att("PrivateIp"),
            ),
        )
        login = resolved.login_nodes
        if node_files.login_user_data is not None:
            user_data = with_bundle_url(node_files.login_user_data, bundle.url)
            node = service_node("login", login.instance_type, login.root_volume_gib, user_data)
            LoginNodes(self, "LoginNodes", LoginNodesProps(node=node, count=login.count))
            if resolved.users:
                UserSessions(
                    self,
                    "UserSessions",
                    UserSessionsProps(
                        region=resolved.region,
                        account=resolved.account,
                        document_name=named.session_document,
                        policy_name=named.people_policy,
                        # The tags the login nodes' template gives them, less the user's own.
                        login_tags=node_tags({names.CLUSTER_TAG: resolved.name}, "login"),
                        user_names=tuple(user.name for user in resolved.users),
                        default_user=names.SSM_USER,
                    ),
                )
        for group in resolved.groups:
            ComputeFleet(
                self,
                f"Compute-{group.name}",
                ComputeFleetProps(
                    cluster=resolved.name,
                    cluster_tags=resolved.tags,
                    group=group.name,
                    instance_type=group.instance.name,
                    count=group.count,
                    capacity_type=group.capacity_type,
                    reservation_id=group.reservation_id,
                    interfaces=group.interfaces,
                    root_volume_gib=group.root_volume_gib,
                    facts_parameter=group.parameter,
                    launch_hook_timeout_seconds=node_files.launch_hook_timeout_seconds,
                    image_id=image_id,
                    subnet_id=subnet_id,
                    instance_profile_arn=roles.instance_profiles["compute"].att("Arn"),
                    security_group_ids=[nodes_security_group_id, efa_security_group_id],
                    user_data=with_bundle_url(node_files.compute_user_data[group.name], bundle.url),
                    creates_placement_group=group.creates_placement_group,
                    existing_placement_group=group.existing_placement_group,
                ),
            )

"""Monitoring (stateless, small): the cluster's dashboard, its alarms and their SNS topic.

Its own stack so the Cluster stack's synth and deploy do not carry it, and so it can be
deleted and redeployed freely. It imports nothing from the other stacks: the FSx file
system's id comes from the Storage stack's SSM parameter, resolved at deploy.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.agents import metric_names
from gpucluster.agents.block_decision import DEFAULT_GRACE
from gpucluster.constructs_lib.cluster_alarms import GIB, ClusterAlarms, ClusterAlarmsProps
from gpucluster.constructs_lib.cluster_dashboard import ClusterDashboard, ClusterDashboardProps
from gpucluster.constructs_lib.dashboard_widgets import DashboardInputs
from gpucluster.resolved import ResolvedCluster


class MonitoringStack(cdk.Stack):
    def __init__(self, scope: Construct, id: str, *, resolved: ResolvedCluster, **kwargs: Any) -> None:
        super().__init__(scope, id, **kwargs)
        monitoring = resolved.monitoring
        fsx = resolved.fsx_lustre
        fsx_id = None
        if fsx is not None:
            fsx_id = cdk.CfnParameter(
                self,
                "FsxFileSystemId",
                type="AWS::SSM::Parameter::Value<String>",
                default=resolved.names.storage_parameters["fsx_id"],
                description="SSM parameter holding the FSx for Lustre file system id (the Storage stack's)",
            ).value_as_string
        blocks = tuple(group.name for group in resolved.groups if group.capacity_type == "capacity-block")
        namespace = metric_names.namespace(resolved.name)
        ClusterDashboard(
            self,
            "Dashboard",
            ClusterDashboardProps(
                # With the region, like the role names: clusters of one name in two regions never share it.
                name=f"gpucluster-{resolved.name}-{resolved.region}",
                inputs=DashboardInputs(namespace, resolved.region, blocks, fsx_id),
            ),
        )
        ClusterAlarms(
            self,
            "Alarms",
            ClusterAlarmsProps(
                cluster=resolved.name,
                namespace=namespace,
                alarm_email=monitoring.alarm_email,
                node_unavailable_minutes=monitoring.node_unavailable_minutes,
                idle_gpu_minutes=monitoring.idle_gpu_minutes,
                block_groups=blocks,
                block_grace_minutes=int(DEFAULT_GRACE.total_seconds() // 60),
                fsx_id=fsx_id,
                fsx_min_free_bytes=(
                    fsx.storage_gib * GIB * monitoring.fsx_free_percent // 100 if fsx is not None else None
                ),
            ),
        )

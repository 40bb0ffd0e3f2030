"""The cluster's CloudWatch dashboard: one per cluster, its widgets from dashboard_widgets."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.dashboard_widgets import DashboardInputs, widgets


@dataclass(frozen=True)
class ClusterDashboardProps:
    name: str
    inputs: DashboardInputs


class ClusterDashboard(Construct):
    dashboard: Resource

    def __init__(self, scope: Construct, id: str, props: ClusterDashboardProps) -> None:
        super().__init__(scope, id)
        body = {"widgets": widgets(props.inputs)}
        self.dashboard = resource(
            self,
            "Resource",
            "AWS::CloudWatch::Dashboard",
            # to_json_string keeps the FSx id token a reference inside the JSON text.
            {"DashboardBody": cdk.Stack.of(self).to_json_string(body), "DashboardName": props.name},
        )

"""A scheduled agent function of the EKS stack: its handler's agent module and what that
imports (gpucluster.agent_package), run every minute by an EventBridge schedule, with its own
role and log group. The Capacity Block scaler (block_scaler.py) and the topology writer
(topology_writer.py) are built by it; each adds its own statements to the role. The accounting
password writer (accounting_secret.py) is the same function without the schedule. The topology
writer and the password writer reach the Kubernetes API the same way (kubernetes_access).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import cast

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from gpucluster.agent_package import agent_tree, handler_module, write_tree
from gpucluster.agents.cluster_names import CLUSTER_SETTING
from gpucluster.agents.kube_api import CA_SETTING, ENDPOINT_SETTING

# The newest Python runtime Lambda offers (Lambda developer guide, "Building Lambda functions
# with Python"); it includes boto3, the packages' only dependency.
RUNTIME = lambda_.Runtime.PYTHON_3_14
SCHEDULE = cdk.Duration.minutes(1)
# A run's calls are each bounded by the agents' client timeouts; under the schedule's minute,
# so runs never overlap.
TIMEOUT = cdk.Duration.seconds(50)
LOG_RETENTION = logs.RetentionDays.THREE_MONTHS


def agent_role(scope: Construct, description: str) -> tuple[iam.Role, logs.LogGroup]:
    """The function's role (its statements added by the caller) and its log group."""
    log_group = logs.LogGroup(scope, "Log", retention=LOG_RETENTION, removal_policy=cdk.RemovalPolicy.DESTROY)
    role = iam.Role(
        scope, "Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"), description=description
    )
    return role, log_group


def kubernetes_access(
    scope: Construct, cluster: eks.Cluster, role: iam.Role, group: str
) -> tuple[eks.CfnAccessEntry, dict[str, str]]:
    """An access entry of type STANDARD that makes `role` a member of the Kubernetes `group`
    and gives it no access policy (what the group may do is the RBAC in
    gpucluster.eks.manifests.objects), and the function's settings that tell kube_api where
    the API is: the public endpoint and the cluster's CA, from its attributes."""
    entry = eks.CfnAccessEntry(
        scope,
        "AccessEntry",
        cluster_name=cluster.cluster_name,
        principal_arn=role.role_arn,
        type="STANDARD",
        kubernetes_groups=[group],
    )
    settings = {
        CLUSTER_SETTING: cluster.cluster_name,
        ENDPOINT_SETTING: cluster.cluster_endpoint,
        CA_SETTING: cluster.cluster_certificate_authority_data,
    }
    return entry, settings


def packaged_function(
    scope: Construct,
    *,
    role: iam.Role,
    log_group: logs.LogGroup,
    handler: str,
    environment: Mapping[str, str],
    description: str,
) -> lambda_.Function:
    """The function, its package the tree of what `handler`'s module imports and nothing else;
    the role may write the log group too. Run by a schedule (agent_function) or by
    CloudFormation (a custom resource's)."""
    log_group.grant_write(role)
    # The function copies its code into the cloud assembly while it is made, as an asset named
    # by the hash of the files' paths and contents; so the directory they are written to need
    # not outlive it, and the asset is the same on every synth.
    with tempfile.TemporaryDirectory(prefix="gpucluster-function-") as directory:
        write_tree(agent_tree((handler_module(handler),)), Path(directory))
        function = lambda_.Function(
            scope,
            "Function",
            runtime=RUNTIME,
            handler=handler,
            code=lambda_.Code.from_asset(directory),
            role=role,
            timeout=TIMEOUT,
            memory_size=256,
            log_group=log_group,
            environment=dict(environment),
            description=description,
        )
    # aws-cdk-lib writes a DependsOn on the role beside the GetAtt that already orders them
    # (cfn-lint W3005), as on the kubectl provider's functions (kubectl.py).
    cast(cdk.CfnResource, function.node.default_child).add_metadata(
        "cfn-lint", {"config": {"ignore_checks": ["W3005"]}}
    )
    return function


def agent_function(
    scope: Construct,
    *,
    role: iam.Role,
    log_group: logs.LogGroup,
    handler: str,
    environment: Mapping[str, str],
    description: str,
    schedule_description: str,
) -> lambda_.Function:
    """The function (packaged_function) and the schedule that runs it."""
    function = packaged_function(
        scope,
        role=role,
        log_group=log_group,
        handler=handler,
        environment=environment,
        description=description,
    )
    events.Rule(
        scope,
        "Schedule",
        schedule=events.Schedule.rate(SCHEDULE),
        description=schedule_description,
        # A missed run is simply the next minute's: no retry of a stale one.
        targets=[targets.LambdaFunction(function, retry_attempts=0)],
    )
    return function

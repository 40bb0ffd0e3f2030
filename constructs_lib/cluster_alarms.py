"""The cluster's alarms and the SNS topic they notify (an address from `monitoring:` subscribed).

Each alarm reads metric_names.Metric objects (or FSx's own metrics), so it can only name
what a collector publishes. Alarms on per-node series use a Metrics Insights query
(one series over every node), which alarms accept where SEARCH is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.agents import metric_names as m
from gpucluster.constructs_lib.cfn import Resource, resource
from gpucluster.constructs_lib.dashboard_widgets import FSX_DIMENSION, FSX_FREE, FSX_NAMESPACE
from gpucluster.constructs_lib.nag import acknowledge

GIB = 1024**3


@dataclass(frozen=True)
class ClusterAlarmsProps:
    cluster: str
    namespace: str
    alarm_email: str | None
    node_unavailable_minutes: int
    idle_gpu_minutes: int
    # The Capacity Block groups and the controller's grace before a block's end (minutes).
    block_groups: tuple[str, ...]
    block_grace_minutes: int
    # FSx for Lustre: its id (a token) and the bytes below which free space alarms; None: no FSx.
    fsx_id: str | None
    fsx_min_free_bytes: int | None


def _stat(
    namespace: str, name: str, dimensions: dict[str, str], stat: str, id: str, data: bool
) -> dict[str, Any]:
    return {
        "Id": id,
        "MetricStat": {
            "Metric": {
                "Namespace": namespace,
                "MetricName": name,
                **(
                    {"Dimensions": [{"Name": k, "Value": v} for k, v in dimensions.items()]}
                    if dimensions
                    else {}
                ),
            },
            "Period": m.PERIOD_SECONDS,
            "Stat": stat,
        },
        "ReturnData": data,
    }


def metric_stat(
    namespace: str, spec: m.Metric, dimensions: dict[str, str], stat: str, id: str, data: bool = True
) -> dict[str, Any]:
    if tuple(dimensions) != spec.dimensions:
        raise ValueError(f"{spec.name} has dimensions {spec.dimensions}, not {tuple(dimensions)}")
    return _stat(namespace, spec.name, dimensions, stat, id, data)


def query(text: str, id: str) -> dict[str, Any]:
    return {"Expression": text, "Id": id, "Period": m.PERIOD_SECONDS, "ReturnData": True}


def math(text: str, id: str, label: str) -> dict[str, Any]:
    return {"Expression": text, "Id": id, "Label": label, "ReturnData": True}


@dataclass(frozen=True)
class AlarmSpec:
    id: str
    description: str
    metrics: Sequence[dict[str, Any]]
    comparison: str
    threshold: float
    minutes: int
    missing: str = "notBreaching"


def alarm_specs(props: ClusterAlarmsProps) -> list[AlarmSpec]:
    ns = props.namespace
    specs = [
        AlarmSpec(
            "NodesUnavailable",
            f"Slurm nodes drained or down for {props.node_unavailable_minutes} minutes",
            [
                metric_stat(ns, m.SLURM_NODES, {m.STATE: "drained"}, "Minimum", "drained", data=False),
                metric_stat(ns, m.SLURM_NODES, {m.STATE: "down"}, "Minimum", "down", data=False),
                math("drained + down", "unavailable", "drained or down nodes"),
            ],
            "GreaterThanThreshold",
            0,
            props.node_unavailable_minutes,
            # No figures from the head at all is worth a look too.
            missing="breaching",
        ),
        AlarmSpec(
            "GpuXidErrors",
            "A GPU logged an NVIDIA Xid error",
            [query(m.insights(ns, m.GPU_XID_ERRORS, "SUM"), "xid")],
            "GreaterThanThreshold",
            0,
            1,
        ),
        AlarmSpec(
            "GpuEccErrors",
            "A GPU has uncorrectable ECC errors",
            [query(m.insights(ns, m.GPU_ECC_ERRORS, "MAX"), "ecc")],
            "GreaterThanThreshold",
            0,
            1,
        ),
        AlarmSpec(
            "AllocatedGpusIdle",
            f"GPUs allocated to jobs sat below {m.IDLE_GPU_PERCENT:g}% use "
            f"for {props.idle_gpu_minutes} minutes",
            [metric_stat(ns, m.SLURM_GPUS_IDLE_ALLOCATED, {}, "Minimum", "idle")],
            "GreaterThanThreshold",
            0,
            props.idle_gpu_minutes,
        ),
    ]
    for group in props.block_groups:
        specs.append(
            AlarmSpec(
                f"BlockEnding{group.capitalize()}",
                f"Capacity Block of group {group} ends within {props.block_grace_minutes} minutes "
                "and jobs are still running",
                [
                    metric_stat(
                        ns, m.CAPACITY_BLOCK_MINUTES_LEFT, {m.GROUP: group}, "Minimum", "left", data=False
                    ),
                    metric_stat(ns, m.SLURM_JOBS_RUNNING, {}, "Maximum", "running", data=False),
                    math(
                        f"IF(left <= {props.block_grace_minutes} AND running > 0, 1, 0)",
                        "ending",
                        "block ending with jobs running",
                    ),
                ],
                "GreaterThanOrEqualToThreshold",
                1,
                1,
            )
        )
    if props.fsx_id is not None and props.fsx_min_free_bytes is not None:
        specs.append(
            AlarmSpec(
                "FsxFreeSpaceLow",
                f"FSx for Lustre has less than {props.fsx_min_free_bytes // GIB} GiB free",
                [_stat(FSX_NAMESPACE, FSX_FREE, {FSX_DIMENSION: props.fsx_id}, "Minimum", "free", True)],
                "LessThanThreshold",
                props.fsx_min_free_bytes,
                5,
            )
        )
    return specs


class ClusterAlarms(Construct):
    topic: Resource
    alarms: dict[str, Resource]

    def __init__(self, scope: Construct, id: str, props: ClusterAlarmsProps) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        self.topic = resource(
            self, "Topic", "AWS::SNS::Topic", {"DisplayName": f"gpucluster {props.cluster} alarms"}
        )
        acknowledge(
            self.topic,
            "SNS2",
            "CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key, "
            "and alarm notices carry only the alarm's name, state and metric values",
        )
        resource(
            self,
            "TopicPolicy",
            "AWS::SNS::TopicPolicy",
            {
                "PolicyDocument": {
                    "Statement": [
                        {
                            "Action": "sns:Publish",
                            "Condition": {"StringEquals": {"aws:SourceAccount": stack.account}},
                            "Effect": "Allow",
                            "Principal": {"Service": "cloudwatch.amazonaws.com"},
                            "Resource": self.topic.ref_token,
                            "Sid": "CloudWatchAlarms",
                        },
                        {
                            "Action": "sns:Publish",
                            "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            "Effect": "Deny",
                            "Principal": "*",
                            "Resource": self.topic.ref_token,
                            "Sid": "TlsOnly",
                        },
                    ],
                    "Version": "2012-10-17",
                },
                "Topics": [self.topic.ref_token],
            },
        )
        if props.alarm_email is not None:
            resource(
                self,
                "Email",
                "AWS::SNS::Subscription",
                {"Endpoint": props.alarm_email, "Protocol": "email", "TopicArn": self.topic.ref_token},
            )
        self.alarms = {}
        for spec in alarm_specs(props):
            self.alarms[spec.id] = resource(
                self,
                spec.id,
                "AWS::CloudWatch::Alarm",
                {
                    "AlarmActions": [self.topic.ref_token],
                    "AlarmDescription": f"gpucluster {props.cluster}: {spec.description}",
                    "ComparisonOperator": spec.comparison,
                    "DatapointsToAlarm": spec.minutes,
                    "EvaluationPeriods": spec.minutes,
                    "Metrics": list(spec.metrics),
                    "OKActions": [self.topic.ref_token],
                    "Threshold": spec.threshold,
                    "TreatMissingData": spec.missing,
                },
            )

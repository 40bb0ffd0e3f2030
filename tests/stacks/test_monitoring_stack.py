"""The Monitoring stack: one dashboard and the alarms per cluster, reading only metrics the
collectors publish (metric_names) or FSx's own, and an SNS topic the YAML's address joins."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from gpucluster.agents import metric_names as m
from gpucluster.constructs_lib.dashboard_widgets import FSX_DIMENSION, FSX_NAMESPACE
from tests.conftest import EXAMPLE_NAMES, resources_of
from tests.stacks.stack_templates import stack

# FSx for Lustre's own metrics the stack may read (FSx for Lustre user guide, "Monitoring").
FSX_METRICS = {"FreeDataStorageCapacity", "DataReadBytes", "DataWriteBytes"}
_QUERY = re.compile(r'SELECT \w+\((?P<name>\w+)\) FROM SCHEMA\("(?P<ns>[^"]+)"(?P<dims>(?:, \w+)*)\)')
FSX_ID = "fs-0123456789abcdef0"


def resolved(value: Any) -> Any:
    """The template's text with the FSx id parameter filled in, as CloudFormation would."""
    if isinstance(value, dict):
        if value == {"Ref": "FsxFileSystemId"}:
            return FSX_ID
        if list(value) == ["Fn::Join"]:
            separator, parts = value["Fn::Join"]
            return separator.join(resolved(part) for part in parts)
        return {key: resolved(item) for key, item in value.items()}
    if isinstance(value, list):
        return [resolved(item) for item in value]
    return value


def read_metrics(template: dict) -> set[tuple[str, str, tuple[str, ...]]]:
    """(namespace, metric, sorted dimension names) of everything the dashboard and alarms read."""
    found: set[tuple[str, str, tuple[str, ...]]] = set()

    def from_query(text: str) -> None:
        for match in _QUERY.finditer(text):
            dims = tuple(sorted(d.strip() for d in match["dims"].split(",") if d.strip()))
            found.add((match["ns"], match["name"], dims))

    (dashboard,) = resources_of(template, "AWS::CloudWatch::Dashboard").values()
    body = json.loads(resolved(dashboard["Properties"]["DashboardBody"]))
    for widget in body["widgets"]:
        queries = [line for line in widget["properties"]["metrics"] if isinstance(line[0], dict)]
        # CloudWatch runs one Metrics Insights query per GetMetricData, so one per widget.
        assert sum("SELECT" in line[0]["expression"] for line in queries) <= 1, widget["properties"]["title"]
        for line in widget["properties"]["metrics"]:
            if isinstance(line[0], dict):
                from_query(line[0]["expression"])
                continue
            namespace, name, *rest = [part for part in line if not isinstance(part, dict)]
            found.add((namespace, name, tuple(sorted(rest[0::2]))))
    for alarm in resources_of(template, "AWS::CloudWatch::Alarm").values():
        for query in resolved(alarm["Properties"]["Metrics"]):
            if "Expression" in query:
                from_query(query["Expression"])
            else:
                metric = query["MetricStat"]["Metric"]
                dims = tuple(sorted(d["Name"] for d in metric.get("Dimensions", [])))
                found.add((metric["Namespace"], metric["MetricName"], dims))
    return found


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_everything_read_is_published_with_those_dimensions(synthesized, example_configs, example):
    cfg = example_configs[example]
    published = {(m.namespace(cfg.name), x.name, tuple(sorted(x.dimensions))) for x in m.ALL_METRICS}
    read = read_metrics(stack(synthesized, example, "monitoring"))
    ours = {item for item in read if item[0] != FSX_NAMESPACE}
    assert ours <= published, f"read but never published: {sorted(ours - published)}"
    fsx = {item for item in read if item[0] == FSX_NAMESPACE}
    assert fsx <= {(FSX_NAMESPACE, name, (FSX_DIMENSION,)) for name in FSX_METRICS}
    assert bool(fsx) == (cfg.storage.fsx_lustre is not None)
    (dashboard,) = resources_of(
        stack(synthesized, example, "monitoring"), "AWS::CloudWatch::Dashboard"
    ).values()
    assert dashboard["Properties"]["DashboardName"] == f"gpucluster-{cfg.name}-{cfg.region}"
    # The widgets show every kind the issue asks for: GPUs, EFA, Slurm, jobs, blocks.
    names = {name for _, name, _ in read}
    assert {m.GPU_UTILIZATION.name, m.EFA_TX_BYTES.name, m.SLURM_NODES.name, m.JOB_IDLE_GPUS.name} <= names


def test_the_cross_check_catches_a_misnamed_metric(synthesized):
    template = json.loads(
        json.dumps(stack(synthesized, "default", "monitoring")).replace("GpuXidErrors", "GpuXids")
    )
    published = {(m.namespace("demo"), x.name, tuple(sorted(x.dimensions))) for x in m.ALL_METRICS}
    assert (m.namespace("demo"), "GpuXids", (m.GPU, m.NODE)) in read_metrics(template) - published


@pytest.mark.parametrize("example", ["default", "mixed"])
def test_alarms_notify_the_topic_and_the_yaml_address(synthesized, example_configs, example):
    cfg = example_configs[example]
    template = stack(synthesized, example, "monitoring")
    (topic_id,) = resources_of(template, "AWS::SNS::Topic")
    alarms = resources_of(template, "AWS::CloudWatch::Alarm")
    described = sorted(alarm["Properties"]["AlarmDescription"] for alarm in alarms.values())
    assert any("drained or down for 15 minutes" in text for text in described)
    assert any("Xid" in text for text in described) and any("ECC" in text for text in described)
    assert any(
        f"sat below 5% use for {cfg.monitoring.idle_gpu_minutes} minutes" in text for text in described
    )
    blocks = [g for g in cfg.compute_groups if g.capacity.type == "capacity-block"]
    ending = [text for text in described if "ends within 60 minutes and jobs are still running" in text]
    assert len(ending) == len(blocks)
    assert any("FSx for Lustre has less than" in text for text in described) == (
        cfg.storage.fsx_lustre is not None
    )
    for alarm in alarms.values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]
    subscriptions = resources_of(template, "AWS::SNS::Subscription")
    email = cfg.monitoring.alarm_email
    assert [s["Properties"]["Endpoint"] for s in subscriptions.values()] == ([email] if email else [])
    assert bool(email) == (example == "mixed")
    (policy,) = resources_of(template, "AWS::SNS::TopicPolicy").values()
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["TlsOnly"]["Effect"] == "Deny"
    assert statements["CloudWatchAlarms"]["Principal"] == {"Service": "cloudwatch.amazonaws.com"}


def test_the_fsx_alarm_fires_below_the_configured_share(synthesized, example_configs):
    cfg = example_configs["default"]
    assert cfg.storage.fsx_lustre is not None
    alarms = resources_of(stack(synthesized, "default", "monitoring"), "AWS::CloudWatch::Alarm")
    (fsx,) = [a["Properties"] for a in alarms.values() if "FSx" in a["Properties"]["AlarmDescription"]]
    assert fsx["ComparisonOperator"] == "LessThanThreshold"
    assert (
        fsx["Threshold"]
        == cfg.storage.fsx_lustre.storage_gib * 1024**3 * cfg.monitoring.fsx_free_percent // 100
    )
    (query,) = fsx["Metrics"]
    assert query["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": FSX_DIMENSION, "Value": {"Ref": "FsxFileSystemId"}}
    ]

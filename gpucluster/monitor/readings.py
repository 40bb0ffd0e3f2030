"""The latest value of each metric `gpucluster top` shows, read with GetMetricData.

Per-node and per-job figures come from Metrics Insights queries grouped by node or job
(each answer's label is the group's value); the cluster's own figures from plain metric
queries. Every name comes from metric_names, as the dashboard's do. One call per
Metrics Insights query: GetMetricData takes one such query per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from gpucluster.agents import metric_names as m
from gpucluster.aws.errors import aws_call

CALL = "cloudwatch:GetMetricData"
# How far back the latest value may be: a few collector periods.
WINDOW = timedelta(minutes=10)


def _latest(results: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Label -> newest value; results without a value are left out."""
    found: dict[str, float] = {}
    for result in results:
        pairs = sorted(zip(result.get("Timestamps", []), result.get("Values", []), strict=True), reverse=True)
        if pairs:
            found[result.get("Label", result["Id"])] = float(pairs[0][1])
    return found


def _ask(client: Any, region: str, queries: list[dict[str, Any]], now: datetime) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    with aws_call(CALL, region):
        for page in client.get_paginator("get_metric_data").paginate(
            MetricDataQueries=queries, StartTime=now - WINDOW, EndTime=now, ScanBy="TimestampDescending"
        ):
            results.extend(page["MetricDataResults"])
    return results


def grouped(client: Any, region: str, query: str, now: datetime) -> dict[str, float]:
    """Group value (node or job) -> latest value of a Metrics Insights query."""
    return _latest(_ask(client, region, [{"Id": "q", "Expression": query, "Period": m.PERIOD_SECONDS}], now))


@dataclass(frozen=True)
class Plain:
    id: str
    metric: m.Metric
    dimensions: tuple[tuple[str, str], ...] = ()
    stat: str = "Maximum"


def plain(
    client: Any, region: str, namespace: str, wanted: Sequence[Plain], now: datetime
) -> dict[str, float]:
    """Query id -> latest value of explicit metrics."""
    queries = [
        {
            "Id": item.id,
            "Label": item.id,
            "MetricStat": {
                "Metric": {
                    "Namespace": namespace,
                    "MetricName": item.metric.name,
                    "Dimensions": [{"Name": k, "Value": v} for k, v in item.dimensions],
                },
                "Period": m.PERIOD_SECONDS,
                "Stat": item.stat,
            },
        }
        for item in wanted
    ]
    return _latest(_ask(client, region, queries, now))

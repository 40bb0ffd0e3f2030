"""CloudWatch embedded metric format (EMF): how both collectors publish.

A collector appends one JSON line per dimension set to an hourly file under
METRICS_LOG_DIR; the node's CloudWatch agent ships the directory to the cluster's log
group (gpucluster.bootstrap.node_logs) and CloudWatch Logs extracts the metrics. The
agent marks a stream as EMF when a line is a JSON object holding "CloudWatchMetrics"
(its cloudwatchlogs output, `switchToEMF`), and deletes a file once it has moved on to
a newer one (`auto_removal`), so nothing here rotates or cleans up.

Going through the agent rather than PutMetricData means no AWS SDK and no extra
permission on compute nodes, and lines written while the agent or the network is down
are shipped when it is back instead of being lost.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path

from gpucluster.agents.metric_names import Metric

# A directory under /var/log: the compute unit's LogsDirectory= names it.
METRICS_LOG_DIR_NAME = "gpucluster-metrics"
METRICS_LOG_DIR = f"/var/log/{METRICS_LOG_DIR_NAME}"
METRICS_LOG_GLOB = f"{METRICS_LOG_DIR}/*.emf"
# EMF allows at most 100 metrics in one record (CloudWatch EMF specification).
MAX_METRICS = 100


def record(
    namespace: str,
    dimensions: Mapping[str, str],
    values: Sequence[tuple[Metric, float]],
    when: datetime,
) -> str:
    """One EMF line: `values` share `dimensions`, which must be exactly each metric's own."""
    if not values or len(values) > MAX_METRICS:
        raise ValueError(f"an EMF record holds 1 to {MAX_METRICS} metrics, not {len(values)}")
    keys = tuple(dimensions)
    for metric, _ in values:
        if metric.dimensions != keys:
            raise ValueError(f"{metric.name} has dimensions {metric.dimensions}, not {keys}")
    body: dict[str, object] = {
        "_aws": {
            "Timestamp": int(when.timestamp() * 1000),
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [list(keys)],
                    "Metrics": [{"Name": metric.name, "Unit": metric.unit} for metric, _ in values],
                }
            ],
        },
        **dimensions,
    }
    for metric, value in values:
        body[metric.name] = value
    return json.dumps(body, separators=(",", ":"), sort_keys=True)


def append(lines: Sequence[str], when: datetime, directory: str | Path = METRICS_LOG_DIR) -> Path:
    """Append `lines` to this hour's file in one write, so the agent never reads half a line."""
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{when.strftime('%Y%m%d%H')}.emf"
    data = "".join(f"{line}\n" for line in lines).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    return path

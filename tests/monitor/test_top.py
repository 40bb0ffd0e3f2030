"""`gpucluster top`: the cluster's summary, nodes and idle jobs from CloudWatch (botocore's
Stubber answers each GetMetricData), and an AWS failure as one line, exit 1."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from botocore.stub import ANY
from typer.testing import CliRunner

from gpucluster.agents import metric_names as m
from gpucluster.cli import app
from tests.aws.stubs import StubbedAws
from tests.conftest import REPO

DEFAULT = str(REPO / "examples" / "default.yaml")
NS = "gpucluster/demo"
A, B = "gpu-i-0a1b2c3d4e5f60001", "gpu-i-0a1b2c3d4e5f60002"
NOW = datetime.now(UTC).replace(microsecond=0)


def series(label: str, *values: float) -> dict:
    times = [NOW - timedelta(minutes=n) for n in range(len(values))]
    return {"Id": "q", "Label": label, "Timestamps": times, "Values": list(values), "StatusCode": "Complete"}


def insights_call(stub, query: str, results: list[dict]) -> None:
    expected = {
        "MetricDataQueries": [{"Id": "q", "Expression": query, "Period": 60}],
        "StartTime": ANY,
        "EndTime": ANY,
        "ScanBy": "TimestampDescending",
    }
    stub.add_response("get_metric_data", {"MetricDataResults": results}, expected)


def queue_cluster(stub) -> None:
    cluster = {
        "nodes_mixed": 1,
        "nodes_drained": 1,
        "gpus_total": 16,
        "gpus_allocated": 12,
        "gpus_idle": 5,
        "jobs_running": 2,
        "jobs_pending": 3,
    }
    results = [{**series(key, value), "Id": key} for key, value in cluster.items()]
    stub.add_response(
        "get_metric_data",
        {"MetricDataResults": results},
        {"MetricDataQueries": ANY, "StartTime": ANY, "EndTime": ANY, "ScanBy": "TimestampDescending"},
    )
    insights_call(
        stub,
        m.insights(NS, m.GPU_UTILIZATION, "AVG", m.NODE, order="ASC"),
        [series(A, 91.5, 10.0), series(B, 12.0)],
    )
    insights_call(stub, m.insights(NS, m.GPU_XID_ERRORS, "SUM", m.NODE), [series(A, 0), series(B, 2)])
    insights_call(stub, m.insights(NS, m.EFA_TX_BYTES, "SUM", m.NODE), [series(A, 3.2e10)])
    insights_call(stub, m.insights(NS, m.EFA_RX_BYTES, "SUM", m.NODE), [series(A, 3.1e10)])
    insights_call(
        stub, m.insights(NS, m.JOB_IDLE_GPUS, "MAX", m.JOB, limit=10), [series("41", 5), series("40", 0)]
    )
    insights_call(
        stub, m.insights(NS, m.JOB_GPU_UTILIZATION, "AVG", m.JOB), [series("41", 21.0), series("40", 95)]
    )


def test_top_shows_the_cluster_nodes_and_the_jobs_wasting_gpus(aws: StubbedAws):
    queue_cluster(aws.stub("cloudwatch", "us-east-2"))
    result = CliRunner().invoke(app, ["top", DEFAULT])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "- idle, - allocated, 1 mixed, 1 drained, - down" in " ".join(out.split())
    assert "12 of 16 allocated, 5 of them idle" in " ".join(out.split())
    assert "2 running, 3 pending" in out
    # Nodes, lowest GPU use first; the newest reading counts (A's 91.5 %, not 10 %).
    assert out.index(B) < out.index(A)
    assert "92%" in out and "12%" in out
    assert "32.00 GB/s" in out
    # Only the job holding idle GPUs is listed.
    jobs = out.split("jobs with the most idle GPUs", 1)[1]
    assert "41" in jobs and "21%" in jobs
    assert "95%" not in jobs


def test_an_aws_failure_is_one_line_and_exit_1(aws: StubbedAws):
    aws.stub("cloudwatch", "us-east-2").add_client_error(
        "get_metric_data", "AccessDenied", "User is not authorized to perform cloudwatch:GetMetricData"
    )
    result = CliRunner().invoke(app, ["top", DEFAULT])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error")]
    assert "Traceback" not in result.output
    assert errors == [
        "error aws cloudwatch:GetMetricData (us-east-2): AccessDenied: User is not authorized to perform "
        "cloudwatch:GetMetricData; your IAM identity may not call cloudwatch:GetMetricData; add that "
        "action to its policy or use a role that has it"
    ]

"""`gpucluster gate` on real nccl-tests logs from AWS (tests/fixtures/nccl/INDEX.md).

Each log is decided the way its numbers say, with exactly the reasons they give: the
thresholds come from gpucluster/data/nccl_thresholds.json (published figures), never
from these files.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.catalog import load_catalog
from gpucluster.cli import app
from gpucluster.gate.decide import Context, Verdict, decide_run
from gpucluster.gate.model import Count, NetworkSeen
from gpucluster.gate.run import judge_log
from gpucluster.gate.thresholds import DEFAULT_MIN_FRACTION, published
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "nccl"
EXAMPLES = REPO / "examples"


def fixture(name: str) -> Path:
    return FIXTURES / name


def judged(name: str, instance_type: str | None = None, min_busbw: float | None = None) -> Verdict:
    instance = load_catalog().get(instance_type) if instance_type else None
    verdicts = judge_log(fixture(name), Context(instance, DEFAULT_MIN_FRACTION, min_busbw))
    assert len(verdicts) == 1
    return verdicts[0]


def codes(verdict: Verdict) -> set[str]:
    return {reason.code for reason in verdict.reasons}


# file, --instance-type, the reasons its numbers give (empty: GO)
CASES = [
    ("g4dn.metal-2node-allreduce-eksblueprints-example-readme.txt", None, {"no-threshold"}),
    (
        "g5.8xlarge-1node-allreduce-failed-ncclTests-issue249.txt",
        "g5.8xlarge",
        {"stopped-early", "one-rank", "transport-unknown"},
    ),
    ("h200-1gpu-all_reduce-nccltests-2.19.6.txt", "p5en.48xlarge", {"one-rank", "transport-not-efa"}),
    ("h200-1gpu-all_reduce-nccltests-2.19.6.json", "p5en.48xlarge", {"one-rank", "transport-unknown"}),
    ("h200-1gpu-alltoall-nccltests-2.19.6.txt", "p5en.48xlarge", {"one-rank", "transport-not-efa"}),
    ("h200-1gpu-alltoall-nccltests-2.19.6.json", "p5en.48xlarge", {"one-rank", "transport-unknown"}),
    (
        "p3dn-2node-allreduce-degraded-awsofinccl-issue33.txt",
        None,
        {"stopped-early", "transport-unknown", "no-threshold", "no-large-message"},
    ),
    ("p4d-2node-allreduce-awsefaeks-readme.txt", "p4d.24xlarge", {"busbw-below-threshold"}),
    ("p5-2node-allreduce-mpirun-eksblueprints-pattern-readme.txt", "p5.48xlarge", {"transport-unknown"}),
    (
        "p5en-16node-allreduce-topoaware-awsomedt-readme.txt",
        "p5en.48xlarge",
        {"transport-unknown", "no-threshold"},
    ),
    (
        "p6-b200-2node-allreduce-dstack-pr3961.txt",
        "p6-b200.48xlarge",
        {"stopped-early", "transport-unknown", "no-threshold", "no-large-message"},
    ),
]


def test_every_fixture_is_covered():
    logs = {path.name for path in FIXTURES.iterdir() if path.name != "INDEX.md"}
    assert logs == {name for name, _, _ in CASES}


@pytest.mark.parametrize(("name", "instance_type", "expected"), CASES, ids=[case[0] for case in CASES])
def test_fixture_is_decided_the_way_its_numbers_say(name, instance_type, expected):
    verdict = judged(name, instance_type)
    assert codes(verdict) == expected, [reason.text for reason in verdict.reasons]
    assert verdict.go is False


@pytest.mark.parametrize(("name", "instance_type", "expected"), CASES, ids=[case[0] for case in CASES])
def test_cli_exit_code_is_1_for_each_no_go_fixture(name, instance_type, expected):
    args = ["gate", str(fixture(name))] + (["--instance-type", instance_type] if instance_type else [])
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "NO-GO" in result.output.splitlines()[-1]


def test_p5_log_reaches_the_published_p5_figure_and_only_its_transport_is_unproven():
    verdict = judged("p5-2node-allreduce-mpirun-eksblueprints-pattern-readme.txt", "p5.48xlarge")
    run = verdict.run
    assert run is not None
    # mpirun's [1,0]<stdout>: prefix stripped; 8 B .. 16 GiB, the poster's `...` skipped.
    assert len(run.rows) == 32 and run.rows[-1].size_bytes == 16 << 30
    assert run.ranks == Count(value=16, origin="derived")
    assert verdict.nodes == Count(value=2, origin="derived")
    assert verdict.peak is not None and verdict.peak.busbw_gbps == 480.87
    figure = published("all_reduce_perf", "p5.48xlarge", 2)
    assert figure is not None and "awsome-distributed-training" in figure.source
    assert verdict.threshold is not None
    assert verdict.threshold.floor_gbps == pytest.approx(figure.busbw_gbps * DEFAULT_MIN_FRACTION)
    assert verdict.peak.busbw_gbps > verdict.threshold.floor_gbps


def test_p5_log_with_info_lines_would_go():
    # The same numbers with EFA shown: nothing else stands between this log and GO.
    verdict = judged("p5-2node-allreduce-mpirun-eksblueprints-pattern-readme.txt", "p5.48xlarge")
    assert verdict.run is not None
    seen = NetworkSeen(host="a", kind="efa", detail="Libfabric", efa_nics=32, line=1)
    shown = decide_run(
        verdict.run.model_copy(update={"networks": (seen,)}),
        Context(load_catalog().get("p5.48xlarge"), DEFAULT_MIN_FRACTION, None),
    )
    assert shown.go, [reason.text for reason in shown.reasons]


def test_p4d_log_reads_efa_the_old_error_column_and_falls_short_of_p4de():
    verdict = judged("p4d-2node-allreduce-awsefaeks-readme.txt", "p4d.24xlarge")
    run = verdict.run
    assert run is not None
    assert run.wrong_column == "error" and run.rows[-1].out_of_place.max_error == 5e-07
    assert run.rows[-1].out_of_place.wrong is None
    assert {seen.kind for seen in run.networks} == {"efa"} and len(run.networks) == 2
    assert run.ranks == Count(value=16, origin="log") and verdict.nodes == Count(value=2, origin="log")
    assert run.versions.nccl == "2.9.9"
    assert verdict.peak is not None and verdict.peak.busbw_gbps == 43.81
    assert any("NIC count" in note for note in verdict.notes)


def test_g4dn_log_shows_efa_with_one_nic_and_fails_a_floor_given_on_the_command_line():
    verdict = judged("g4dn.metal-2node-allreduce-eksblueprints-example-readme.txt", min_busbw=5.0)
    run = verdict.run
    assert run is not None
    assert [(seen.kind, seen.efa_nics) for seen in run.networks] == [("efa", 1), ("efa", 1)]
    assert run.ranks == Count(value=2, origin="log") and run.nodes == Count(value=2, origin="log")
    assert (run.versions.nccl, len(run.rows)) == ("2.12.7", 31)
    assert codes(verdict) == {"busbw-below-threshold"}
    assert judged("g4dn.metal-2node-allreduce-eksblueprints-example-readme.txt", min_busbw=3.0).go


def test_p5en_16_nodes_are_derived_and_judged_against_a_floor_from_the_command_line():
    verdict = judged("p5en-16node-allreduce-topoaware-awsomedt-readme.txt", "p5en.48xlarge", min_busbw=300)
    assert verdict.run is not None and verdict.run.ranks == Count(value=128, origin="derived")
    assert verdict.nodes == Count(value=16, origin="derived")
    assert codes(verdict) == {"transport-unknown"}


def test_alltoall_with_factor_4_ending_below_max_bytes_is_complete():
    verdict = judged("h200-1gpu-alltoall-nccltests-2.19.6.txt")
    assert "stopped-early" not in codes(verdict)
    assert verdict.run is not None and verdict.run.rows[-1].in_place.wrong is None  # "N/A"


def test_json_and_text_of_one_run_agree():
    text = judged("h200-1gpu-all_reduce-nccltests-2.19.6.txt").run
    data = judged("h200-1gpu-all_reduce-nccltests-2.19.6.json").run
    assert text is not None and data is not None
    assert [row.size_bytes for row in text.rows] == [row.size_bytes for row in data.rows]
    assert (data.collective, data.versions.nccl) == ("all_reduce_perf", "2.28.9")
    assert data.ranks == Count(value=1, origin="json") and data.nodes == Count(value=1, origin="json")
    assert text.versions.nccl == data.versions.nccl


def test_config_group_gives_the_instance_type():
    by_config = CliRunner().invoke(
        app,
        [
            "gate",
            str(fixture("p4d-2node-allreduce-awsefaeks-readme.txt")),
            "--config",
            str(EXAMPLES / "p4d-on-demand.yaml"),
            "--group",
            "a100",
        ],
    )
    assert by_config.exit_code == 1
    assert "62.66" in by_config.output  # 0.8 x 78.33 GB/s published for p4de


# Two-host logs with NCCL INFO lines, a floor each passes, and the host whose lines are dropped.
TWO_HOSTS = [
    ("g4dn.metal-2node-allreduce-eksblueprints-example-readme.txt", 3.0, "test-nccl-efa-worker-1"),
    ("p4d-2node-allreduce-awsefaeks-readme.txt", 40.0, "nccl-tests-efa-16-worker-1"),
]


@pytest.mark.parametrize(("name", "floor", "host"), TWO_HOSTS, ids=[case[0] for case in TWO_HOSTS])
def test_a_host_that_never_showed_its_network_is_no_go(tmp_path, name, floor, host):
    assert judged(name, min_busbw=floor).go
    lines = fixture(name).read_text().splitlines(keepends=True)
    kept = [line for line in lines if not ("NCCL INFO" in line and f"{host}:" in line)]
    assert len(kept) < len(lines) and any(f"on {host} " in line for line in kept)  # its Rank lines stay
    log = tmp_path / name
    log.write_text("".join(kept))
    [verdict] = judge_log(log, Context(None, DEFAULT_MIN_FRACTION, floor))
    assert codes(verdict) == {"transport-unknown"}
    [reason] = verdict.reasons
    assert f"transport unknown on {host}:" in reason.text and "1 of 2 hosts did" in reason.text
    assert "NCCL_DEBUG=INFO" in reason.text and not reason.node_fault
    result = CliRunner().invoke(app, ["gate", str(log), "--min-busbw", str(floor)])
    assert result.exit_code == 1, result.output
    assert f"transport unknown on {host}" in result.output
    assert result.output.splitlines()[-1] == "NO-GO (1 of 1 runs)"

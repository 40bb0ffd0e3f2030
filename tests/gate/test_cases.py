"""`gpucluster gate` on the cases no public log shows whole (built by tests/nccl_logs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.catalog import load_catalog
from gpucluster.cli import app
from gpucluster.gate.decide import Context, Verdict
from gpucluster.gate.model import Count, Versions
from gpucluster.gate.run import judge_log
from gpucluster.job_output import EfaCheck, efa_check_line
from tests.conftest import REPO
from tests.nccl_logs import GiB, Spec, json_log, text_log

P5 = "p5.48xlarge"


def gate(*args: str | Path):
    return CliRunner().invoke(app, ["gate", *map(str, args)])


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def judged(tmp_path: Path, spec: Spec, *, instance_type: str | None = P5, min_busbw: float | None = None):
    path = write(tmp_path, "all_reduce.log", text_log(spec))
    instance = load_catalog().get(instance_type) if instance_type else None
    return judge_log(path, Context(instance, 0.8, min_busbw))


def codes(verdict: Verdict) -> set[str]:
    return {reason.code for reason in verdict.reasons}


@pytest.mark.parametrize("prefix", ["none", "srun", "mpirun"])
def test_healthy_p5_pair_is_go_with_every_launcher_prefix(tmp_path, prefix):
    (verdict,) = judged(tmp_path, Spec(prefix=prefix))
    assert verdict.go, [reason.text for reason in verdict.reasons]
    run = verdict.run
    assert run is not None
    assert (run.collective, run.collective_from) == ("all_reduce_perf", "log")
    assert run.ranks == Count(value=16, origin="log") and run.nodes == Count(value=2, origin="log")
    assert len(run.rows) == 32 and run.versions == Versions(nccl="2.23.4", nccl_tests="2.19.6")
    assert [(seen.host, seen.kind, seen.efa_nics) for seen in run.networks] == [
        ("gpu-1", "efa", 32),
        ("gpu-2", "efa", 32),
    ]
    result = gate(tmp_path / "all_reduce.log", "--instance-type", P5)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == "GO"


def test_socket_fallback_on_one_node_is_named(tmp_path):
    (verdict,) = judged(tmp_path, Spec(network={"gpu-2": "socket"}, peak_busbw=11.0))
    assert codes(verdict) == {"transport-not-efa", "busbw-below-threshold"}
    (transport,) = [reason for reason in verdict.reasons if reason.code == "transport-not-efa"]
    assert transport.nodes == ("gpu-2",) and "Socket" in transport.text


def test_fewer_efa_nics_than_the_catalog_names_the_host(tmp_path):
    (verdict,) = judged(tmp_path, Spec(nics={"gpu-1": 31}))
    assert codes(verdict) == {"efa-nics"}
    (reason,) = verdict.reasons
    assert reason.nodes == ("gpu-1",) and "32" in reason.text and "gpu-1: 31" in reason.text


def test_wrong_results_and_out_of_bounds_are_each_a_reason(tmp_path):
    (verdict,) = judged(tmp_path, Spec(wrong={1 << 20: 3, 8 * GiB: 1}, out_of_bounds=4))
    assert codes(verdict) == {"wrong-results", "out-of-bounds"}
    wrong = next(reason for reason in verdict.reasons if reason.code == "wrong-results")
    assert "8 wrong values" in wrong.text and "1 MiB" in wrong.text and "8 GiB" in wrong.text


def test_killed_run_stopped_early(tmp_path):
    (verdict,) = judged(tmp_path, Spec(last_size=2 * GiB, summary=False))
    assert codes(verdict) == {"stopped-early"}
    (reason,) = verdict.reasons
    assert "2 GiB of the 16 GiB" in reason.text and "summary" in reason.text


# A100 40 GB (p4d): (42298834944 B - 3 GiB reserve - 1 GiB) / 3 buffers, as nccl-tests'
# src/common.cu works out what fits; -e 16G is lowered to it and the sweep ends at 8 GiB.
A100_40GB_MAX = 12667955882


@pytest.mark.parametrize("prefix", ["none", "srun", "mpirun"])
def test_sweep_lowered_for_gpu_memory_is_complete(tmp_path, prefix):
    (verdict,) = judged(tmp_path, Spec(memory_max=A100_40GB_MAX, prefix=prefix), min_busbw=100.0)
    assert verdict.go, [reason.text for reason in verdict.reasons]
    assert verdict.run is not None and verdict.run.rows[-1].size_bytes == 8 * GiB
    assert (verdict.run.sweep.max_bytes, verdict.run.sweep.asked_max_bytes) == (A100_40GB_MAX, 16 * GiB)
    assert any(f"from 16 GiB to {A100_40GB_MAX} bytes" in note for note in verdict.notes)
    # A run killed under the lowered maximum still stopped early.
    spec = Spec(memory_max=A100_40GB_MAX, prefix=prefix, last_size=2 * GiB, summary=False)
    (killed,) = judged(tmp_path, spec, min_busbw=100.0)
    assert "stopped-early" in codes(killed)


def test_json_sweep_lowered_for_gpu_memory_is_complete_when_the_footer_is_there(tmp_path):
    path = write(tmp_path, "x.json", json_log(Spec(memory_max=A100_40GB_MAX)))
    (verdict,) = judge_log(path, Context(load_catalog().get(P5), 0.8, 100.0))
    assert codes(verdict) == {"transport-unknown"}
    assert any("lowered the largest size from 16 GiB" in note for note in verdict.notes)
    # Without the footer nccl-tests wrote after the last size, the same rows stopped early.
    data = json.loads(path.read_text())
    del data["average_bus_bandwidth"], data["out_of_bounds"]
    path.write_text(json.dumps(data))
    (verdict,) = judge_log(path, Context(load_catalog().get(P5), 0.8, 100.0))
    stopped = next(reason for reason in verdict.reasons if reason.code == "stopped-early")
    assert "8 GiB of the 16 GiB" in stopped.text


def test_run_cut_mid_row_names_the_line(tmp_path):
    (verdict,) = judged(tmp_path, Spec(last_size=256 << 20, cut_row=True, summary=False))
    assert "stopped-early" in codes(verdict) and "no-large-message" in codes(verdict)
    assert verdict.run is not None and verdict.run.cut_row_line is not None


def test_low_bandwidth_against_the_published_p5_figure(tmp_path):
    (verdict,) = judged(tmp_path, Spec(peak_busbw=300.0))
    assert codes(verdict) == {"busbw-below-threshold"}
    assert "389.67 GB/s = 0.8 x 487.09 GB/s" in verdict.reasons[0].text
    # --min-fraction lowers the bar; --min-busbw replaces the figure.
    assert gate(tmp_path / "all_reduce.log", "--instance-type", P5, "--min-fraction", "0.6").exit_code == 0
    assert gate(tmp_path / "all_reduce.log", "--instance-type", P5, "--min-busbw", "250").exit_code == 0
    assert gate(tmp_path / "all_reduce.log", "--instance-type", P5, "--min-busbw", "350").exit_code == 1


def test_one_node_tests_no_network(tmp_path):
    (verdict,) = judged(tmp_path, Spec(hosts=("gpu-1",), peak_busbw=480.0))
    assert codes(verdict) == {"one-node"}


def test_no_info_lines_leave_the_transport_unproven(tmp_path):
    (verdict,) = judged(tmp_path, Spec(info_lines=False))
    assert codes(verdict) == {"transport-unknown"}


def test_json_of_a_healthy_run_lacks_only_the_transport(tmp_path):
    path = write(tmp_path, "x.json", json_log(Spec()))
    (verdict,) = judge_log(path, Context(load_catalog().get(P5), 0.8, None))
    assert codes(verdict) == {"transport-unknown"}
    assert verdict.run is not None
    assert (verdict.run.ranks, verdict.run.nodes) == (
        Count(value=16, origin="json"),
        Count(value=2, origin="json"),
    )
    assert verdict.peak is not None and verdict.peak.size_bytes == 16 * GiB


def test_json_with_wrong_values(tmp_path):
    path = write(tmp_path, "x.json", json_log(Spec(wrong={4 * GiB: 2}, out_of_bounds=2)))
    (verdict,) = judge_log(path, Context(load_catalog().get(P5), 0.8, None))
    assert codes(verdict) == {"transport-unknown", "wrong-results", "out-of-bounds"}


def test_several_collectives_in_one_log_are_judged_each(tmp_path):
    text = text_log(Spec()) + text_log(Spec(collective="all_gather_perf", peak_busbw=10.0))
    verdicts = judge_log(write(tmp_path, "nccl.log", text), Context(load_catalog().get(P5), 0.8, None))
    assert [verdict.run.collective for verdict in verdicts if verdict.run] == [
        "all_reduce_perf",
        "all_gather_perf",
    ]
    assert all(verdict.go for verdict in verdicts)
    assert any("bandwidth not judged" in note for note in verdicts[1].notes)


def test_efa_check_output_names_the_failing_node(tmp_path):
    lines = [
        efa_check_line(EfaCheck("gpu-1", True, 32, 32, 8, "ok")),
        "1: " + efa_check_line(EfaCheck("gpu-2", False, 30, 32, 8, "2 EFA devices missing")),
    ]
    path = write(tmp_path, "efa-check.out", "\n".join(lines) + "\n")
    result = gate(path)
    assert result.exit_code == 1
    assert (
        "scontrol update nodename=gpu-2 state=drain reason='gpucluster gate: efa-check: 30/32 EFA"
        in result.output
    )
    assert "nodename=gpu-1" not in result.output
    (verdict,) = judge_log(path, Context(None, 0.8, None))
    assert [reason.nodes for reason in verdict.reasons] == [("gpu-2",)]


def test_config_with_one_group_needs_no_group(tmp_path):
    path = write(tmp_path, "a.log", text_log(Spec()))
    assert gate(path, "--config", REPO / "examples" / "default.yaml").exit_code == 0


def test_report_json_says_go_for_ci(tmp_path):
    path = write(tmp_path, "a.log", text_log(Spec()))
    result = gate(path, "--instance-type", P5, "--report", tmp_path / "out")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["verdict"] == "GO" and report["exit_code"] == 0
    assert report["verdicts"][0]["threshold"]["figure"]["source"].startswith("https://github.com/")


def test_thresholds_from_the_config_and_the_command_line_over_them(tmp_path):
    """validation.min_fraction / min_busbw_gbps set the bar for `--config`; the options win."""
    path = write(tmp_path, "all_reduce.log", text_log(Spec(peak_busbw=300.0)))
    config = tmp_path / "cluster.yaml"
    default = (REPO / "examples" / "default.yaml").read_text()
    config.write_text(default + "validation:\n  min_fraction: 0.6\n")
    assert gate(path, "--config", REPO / "examples" / "default.yaml").exit_code == 1  # 300 < 0.8 x 487
    assert gate(path, "--config", config).exit_code == 0  # 300 >= 0.6 x 487
    assert gate(path, "--config", config, "--min-fraction", "0.8").exit_code == 1
    config.write_text(default + "validation:\n  min_busbw_gbps: 350\n")
    result = gate(path, "--config", config)
    assert result.exit_code == 1 and "350" in result.output
    assert gate(path, "--config", config, "--min-busbw", "250").exit_code == 0


def test_a_bad_config_threshold_names_the_file_and_field(tmp_path):
    path = write(tmp_path, "all_reduce.log", text_log(Spec()))
    config = tmp_path / "cluster.yaml"
    config.write_text((REPO / "examples" / "default.yaml").read_text() + "validation:\n  min_fraction: 1.5\n")
    result = gate(path, "--config", config)
    assert result.exit_code == 2
    assert f"error {config}: validation.min_fraction: " in result.output


def test_group_without_efa_takes_sockets_as_a_note_and_drains_no_node(tmp_path):
    config = tmp_path / "cluster.yaml"
    default = (REPO / "examples" / "default.yaml").read_text()
    config.write_text(default.replace("    count: 2\n", "    count: 2\n    efa: false\n", 1))
    logs = [
        write(
            tmp_path,
            f"pair-{round_}.log",
            text_log(Spec(network_default="socket", peak_busbw=40.0, pair=pair)),
        )
        for round_, pair in ((1, (1, "gpu-1", "gpu-2")), (2, (2, "gpu-2", "gpu-1")))
    ]
    result = gate(*logs, "--config", config, "--min-busbw", "20")
    assert result.exit_code == 0, result.output
    assert "runs without EFA (efa: false)" in result.output and "scontrol" not in result.output
    # The published figures are EFA runs: without a floor of its own the group gets none.
    result = gate(*logs, "--config", config)
    assert result.exit_code == 1 and "(efa: false); pass --min-busbw" in result.output
    assert "scontrol" not in result.output
    # --instance-type alone, or a group with EFA, still wants EFA.
    result = gate(*logs, "--instance-type", P5, "--min-busbw", "20")
    assert result.exit_code == 1 and "NCCL does not use EFA" in result.output
    assert gate(*logs, "--config", REPO / "examples" / "default.yaml", "--min-busbw", "20").exit_code == 1


def _efa_check_output(tmp_path: Path, *checks: EfaCheck) -> Path:
    return write(tmp_path, "efa-check.out", "".join(f"0: {efa_check_line(check)}\n" for check in checks))


def test_a_failed_pingpong_drains_neither_end_and_says_to_try_other_partners(tmp_path):
    path = _efa_check_output(
        tmp_path,
        EfaCheck("gpu-1", True, 32, 32, 8, "own checks passed", ("gpu-2",)),
        EfaCheck("gpu-2", True, 32, 32, 8, "own checks passed", ("gpu-1",)),
    )
    result = gate(path)
    assert result.exit_code == 1, result.output
    assert "scontrol" not in result.output
    assert "fi_pingpong between gpu-1 and gpu-2 failed and neither node" in result.output
    assert "other partners" in result.output


def test_efa_check_drains_a_node_for_its_own_checks_not_its_healthy_partner(tmp_path):
    path = _efa_check_output(
        tmp_path,
        EfaCheck("gpu-1", True, 32, 32, 8, "own checks passed", ("gpu-2",)),
        EfaCheck("gpu-2", False, 0, 32, 8, "fi_info -p efa found no EFA provider", ("gpu-1",)),
    )
    result = gate(path)
    assert result.exit_code == 1 and "nodename=gpu-2 state=drain" in result.output
    assert "nodename=gpu-1" not in result.output and "other partners" not in result.output


def test_a_node_whose_pingpong_failed_with_two_partners_is_drained(tmp_path):
    # Three nodes: gpu-1 pairs with gpu-2, and gpu-3 wraps around to gpu-1.
    path = _efa_check_output(
        tmp_path,
        EfaCheck("gpu-1", True, 32, 32, 8, "own checks passed", ("gpu-2", "gpu-3")),
        EfaCheck("gpu-2", True, 32, 32, 8, "own checks passed", ("gpu-1",)),
        EfaCheck("gpu-3", True, 32, 32, 8, "own checks passed", ("gpu-1",)),
    )
    result = gate(path)
    assert result.exit_code == 1
    assert "nodename=gpu-1 state=drain" in result.output
    assert "nodename=gpu-2" not in result.output and "nodename=gpu-3" not in result.output


def test_without_device_lines_nccl_node_count_shows_a_host_that_named_no_network(tmp_path):
    # No `#  Rank` lines to name the hosts; NCCL's `nNodes 2` says two nodes ran.
    lines = text_log(Spec()).splitlines()
    kept = [line for line in lines if not line.startswith(("#  Rank", "gpu-2:"))]
    path = write(tmp_path, "all_reduce.log", "\n".join(kept) + "\n")
    (verdict,) = judge_log(path, Context(load_catalog().get(P5), 0.8, None))
    assert verdict.run is not None and verdict.run.hosts == ()
    assert codes(verdict) == {"transport-unknown"}
    assert "transport unknown on 1 of 2 nodes: NCCL INFO lines name the network of 1 (gpu-1)" in (
        verdict.reasons[0].text
    )

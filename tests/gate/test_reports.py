"""Pairwise attribution and what `gpucluster gate --report DIR` writes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from typer.testing import CliRunner

from gpucluster.catalog import load_catalog
from gpucluster.cli import app
from gpucluster.gate.decide import Context
from gpucluster.gate.pairs import attribute
from gpucluster.gate.plot import busbw_figure
from gpucluster.gate.run import evaluate
from gpucluster.job_output import EfaCheck, efa_check_line
from tests.nccl_logs import Spec, text_log
from tests.shell_pipe import HOSTILE_WORDS, pipe_to_sh

P5 = "p5.48xlarge"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def pair_logs(tmp_path: Path, rounds: list[list[tuple[str, str]]], bad: set[str]) -> list[Path]:
    """One log per pair and round; a pair with a bad node runs at a third of the bandwidth."""
    paths = []
    for number, pairs in enumerate(rounds, start=1):
        for first, second in pairs:
            slow = first in bad or second in bad
            spec = Spec(
                hosts=(first, second), pair=(number, first, second), peak_busbw=150.0 if slow else 470.0
            )
            path = tmp_path / f"pair-r{number}-{first}-{second}.out"
            path.write_text(text_log(spec))
            paths.append(path)
    return paths


ROUNDS = [
    [("gpu-1", "gpu-2"), ("gpu-3", "gpu-4")],
    [("gpu-1", "gpu-3"), ("gpu-2", "gpu-4")],
]


def test_two_rounds_name_the_one_bad_node(tmp_path):
    result = evaluate(pair_logs(tmp_path, ROUNDS, {"gpu-4"}), Context(load_catalog().get(P5), 0.8, None))
    assert not result.go
    attribution = result.attribution
    assert attribution.pairs == 4
    assert [suspect.node for suspect in attribution.suspects] == ["gpu-4"]
    (suspect,) = attribution.suspects
    assert suspect.evidence == (
        "pair with gpu-3 (round 1): busbw-below-threshold",
        "pair with gpu-2 (round 2): busbw-below-threshold",
    )
    assert suspect.drain == (
        "scontrol update nodename=gpu-4 state=drain reason='gpucluster gate: pair with gpu-3 (round 1): "
        "busbw-below-threshold'"
    )
    assert attribution.notes == ()


def test_pairs_that_died_before_their_table_name_the_node(tmp_path):
    paths = pair_logs(tmp_path, ROUNDS, set())
    for path in paths:
        if "gpu-3" in path.name:
            pair = path.read_text().splitlines()[0]
            path.write_text(
                f"{pair}\n--------\nmpirun noticed that process rank 9 exited on signal 9 (Killed).\n"
            )
    result = evaluate(paths, Context(load_catalog().get(P5), 0.8, None))
    assert [suspect.node for suspect in result.attribution.suspects] == ["gpu-3"]
    dead = [verdict for verdict in result.verdicts if not verdict.go]
    assert len(dead) == 2
    assert all("no complete result row" in verdict.reasons[0].text for verdict in dead)


def test_cli_prints_the_drain_line_for_the_suspect_only(tmp_path):
    paths = pair_logs(tmp_path, ROUNDS, {"gpu-2"})
    result = CliRunner().invoke(app, ["gate", *map(str, paths), "--instance-type", P5])
    assert result.exit_code == 1
    drains = [line for line in result.output.splitlines() if line.startswith("scontrol update")]
    assert drains == [
        "scontrol update nodename=gpu-2 state=drain reason='gpucluster gate: pair with gpu-1 (round 1): "
        "busbw-below-threshold'"
    ]


def test_one_round_cannot_split_a_failing_pair(tmp_path):
    result = evaluate(pair_logs(tmp_path, ROUNDS[:1], {"gpu-4"}), Context(load_catalog().get(P5), 0.8, None))
    assert [suspect.node for suspect in result.attribution.suspects] == ["gpu-3", "gpu-4"]
    assert result.attribution.notes == (
        "pair gpu-3,gpu-4 failed and neither node passed with another partner: "
        "run another pairwise round to tell which",
    )


def test_pairs_that_cannot_be_judged_name_no_node(tmp_path):
    # No instance type and no --min-busbw: every pair is NO-GO, but not for a node's fault.
    result = evaluate(pair_logs(tmp_path, ROUNDS, {"gpu-4"}), Context(None, 0.8, None))
    assert not result.go and result.attribution.suspects == ()
    assert result.attribution.notes == (
        "4 pair run(s) could not be judged (see their reasons): they name no node",
    )


def test_all_pairs_go(tmp_path):
    result = evaluate(pair_logs(tmp_path, ROUNDS, set()), Context(load_catalog().get(P5), 0.8, None))
    assert result.go and attribute(list(result.verdicts)).suspects == ()


def test_drain_lines_hand_scontrol_hostile_names_whole(tmp_path):
    # Node names and reasons are what the logs say: a job's output, anyone's to write.
    reason = "x; touch pwned-reason $(touch pwned-subst) `touch pwned-tick`"
    lines = [efa_check_line(EfaCheck(name, False, 30, 32, 8, reason)) for name in HOSTILE_WORDS]
    log = tmp_path / "efa-check.out"
    log.write_text("\n".join(lines) + "\n")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["gate", str(log), "--report", str(out)])
    assert result.exit_code == 1, result.output
    printed = result.stdout.split("take the suspect nodes out of scheduling:\n")[1].split("report written")[0]
    in_markdown = (out / "report.md").read_text().split("```sh\n")[1].split("```")[0]
    listed = json.loads((out / "report.json").read_text())["drain_commands"]
    assert printed == in_markdown == "".join(line + "\n" for line in listed)
    run = pipe_to_sh(printed, ["scontrol"], tmp_path)
    assert (run.returncode, run.strays) == (0, [])
    said = f"reason=gpucluster gate: efa-check: 30/32 EFA, {reason}"
    assert sorted(call.argv for call in run.calls) == sorted(
        ["update", f"nodename={name}", "state=drain", said] for name in HOSTILE_WORDS
    )


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_dir_holds_markdown_json_and_one_png_per_run(tmp_path):
    paths = pair_logs(tmp_path, ROUNDS, {"gpu-4"})
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["gate", *map(str, paths), "--instance-type", P5, "--report", str(out)])
    assert result.exit_code == 1, result.output
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 4
    assert all(_png_size(png) == (800, 450) for png in pngs)
    data = json.loads((out / "report.json").read_text())
    assert data["verdict"] == "NO-GO" and data["exit_code"] == 1
    assert [entry["verdict"] for entry in data["verdicts"]] == ["GO", "NO-GO", "GO", "NO-GO"]
    assert {entry["plot"] for entry in data["verdicts"]} == {png.name for png in pngs}
    assert [suspect["node"] for suspect in data["attribution"]["suspects"]] == ["gpu-4"]
    assert data["drain_commands"][0].startswith("scontrol update nodename=gpu-4 state=drain")
    markdown = (out / "report.md").read_text()
    assert markdown.startswith("# gpucluster gate: NO-GO")
    assert "- suspect **gpu-4**" in markdown and data["drain_commands"][0] in markdown
    assert all(f"![busbw]({png.name})" in markdown for png in pngs)
    assert "busbw-below-threshold" in markdown


def test_plot_draws_the_threshold_and_the_published_figure(tmp_path):
    path = tmp_path / "a.log"
    path.write_text(text_log(Spec(peak_busbw=300.0)))
    result = evaluate([path], Context(load_catalog().get(P5), 0.8, None))
    figure = busbw_figure(result.verdicts[0])
    assert figure is not None
    (axes,) = figure.axes
    horizontal = sorted(
        {float(line.get_ydata()[0]) for line in axes.get_lines() if len(set(line.get_ydata())) == 1}
    )
    assert horizontal == [487.09 * 0.8, 487.09]
    assert axes.get_xscale() == "log" and axes.get_ylabel() == "busbw (GB/s)"


def test_report_dir_that_is_a_file_exits_2(tmp_path):
    path = tmp_path / "a.log"
    path.write_text(text_log(Spec()))
    blocker = tmp_path / "report"
    blocker.write_text("")
    result = CliRunner().invoke(app, ["gate", str(path), "--report", str(blocker)])
    assert result.exit_code == 2 and f"error gpucluster gate: --report: {blocker} is a file" in result.output


def test_plot_title_from_the_log_is_text_not_mathtext(tmp_path):
    path = tmp_path / "cost$^{x}$_all_reduce.log"
    path.write_text(text_log(Spec(collective="$\\frac{a}{$_perf")))
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["gate", str(path), "--instance-type", P5, "--report", str(out)])
    assert result.exit_code == 0, result.output
    assert len(list(out.glob("*.png"))) == 1

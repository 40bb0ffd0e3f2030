"""`gpucluster gate` on input it cannot judge: unreadable, cut, binary, compressed or missing
logs and bad threshold or report options end with exit 2 naming what to fix, before any verdict."""

from __future__ import annotations

import gzip
import json

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.gate.decide import Context
from gpucluster.gate.run import judge_log
from tests.conftest import REPO
from tests.gate.test_cases import P5, codes, gate, write
from tests.nccl_logs import Spec, json_log, text_log
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh


def _garbled(text: str, size: int) -> str:
    """The log with one row's busbw replaced by something that is not a number."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == str(size):
            tokens[7] = "12.3.4"
            lines[index] = " ".join(tokens)
    return "\n".join(lines)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("hello\nworld\n", "line 3"),
        (_garbled(text_log(Spec()), 1 << 20), "line 53: a result row holds a value that is not a number"),
        ("{not json\n", "line 1"),
        ('{"version": 3}\n', "results"),
        ('{"results": [{"size": "big"}]}', "results[0].size"),
    ],
    ids=["no-table", "garbled-row", "bad-json", "json-without-results", "json-bad-size"],
)
def test_unreadable_input_exits_2_naming_file_and_line(tmp_path, text, where):
    path = write(tmp_path, "bad.log", text)
    result = gate(path, "--instance-type", P5)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error {path}: {where}"), result.output
    assert "Traceback" not in result.output


def test_row_cut_in_the_middle_of_the_table_exits_2(tmp_path):
    lines = text_log(Spec()).splitlines()
    index = next(i for i, line in enumerate(lines) if line.lstrip().startswith("1048576 "))
    lines[index] = lines[index][:40]
    path = write(tmp_path, "bad.log", "\n".join(lines))
    result = gate(path)
    assert result.exit_code == 2
    assert f"line {index + 1}: a result row is cut short" in result.output


def test_names_from_the_log_are_printed_as_they_are_not_as_markup(tmp_path):
    text = text_log(Spec(collective="[bold]x_perf", network={"gpu-2": "socket"})).replace(
        "Using network Socket", "Using network [bold]x[/y]"
    )
    path = write(tmp_path, "[red]all_reduce.log", text)
    result = gate(path, "--instance-type", P5)
    assert result.exit_code == 1, result.output
    assert "[red]all_reduce.log:1" in result.output and "[bold]x_perf" in result.output
    assert "[bold]x[/y]" in result.output


# An error line shows a name's control characters escaped: the printable names.
@pytest.mark.parametrize("name", [name for name in HOSTILE_NAMES if name.isprintable()])
def test_the_unpack_command_piped_to_sh_gets_the_log_whole(tmp_path, name):
    log = tmp_path / "logs" / f"{name}.gz"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(gzip.compress(text_log(Spec()).encode()))
    result = gate(log)
    assert result.exit_code == 2, result.output
    command = result.stderr.split("it first (`", 1)[1].split("`) and pass the log", 1)[0]
    run = pipe_to_sh(command, ["gunzip"], tmp_path)
    assert (run.returncode, run.strays) == (0, [])
    assert [call.argv for call in run.calls] == [["-k", str(log)]]


def test_binary_missing_and_directory_inputs_exit_2(tmp_path):
    binary = tmp_path / "core"
    binary.write_bytes(b"# nThread\n\x00\x01")
    assert gate(binary).output.startswith(f"error {binary}: line 2: holds binary data")
    assert gate(tmp_path / "nope.log").exit_code == 2
    assert "is a directory" in gate(tmp_path).output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--instance-type", "p9.huge"],
            "error gpucluster gate: --instance-type: p9.huge is not in the instance catalog",
        ),
        (["--instance-type", P5, "--config", "x.yaml"], "is given together with --config/--group"),
        (["--group", "gpu"], "error gpucluster gate: --group: needs --config"),
        (
            ["--config", str(REPO / "examples" / "mixed.yaml")],
            "--group: " + str(REPO / "examples" / "mixed.yaml") + " has 3 compute groups",
        ),
        (["--config", str(REPO / "examples" / "default.yaml"), "--group", "nope"], "no compute group 'nope'"),
    ],
)
def test_bad_threshold_options_exit_2(tmp_path, args, message):
    path = write(tmp_path, "a.log", text_log(Spec()))
    result = gate(path, *args)
    assert result.exit_code == 2
    assert message in result.output


def test_help_names_arguments_as_typed_and_no_log_is_a_usage_error():
    shown = gate("-h")
    assert shown.exit_code == 0
    usage = " ".join(shown.output.split())
    assert "LOG..." in usage and "--min-busbw GBPS" in usage and "--report DIR" in usage
    assert "<path>" not in usage and "<float>" not in usage
    missing = gate()
    assert missing.exit_code == 2 and missing.output.startswith("error gpucluster gate: LOG...: is required;")


def test_json_without_end_time_stopped_early(tmp_path):
    data = json.loads(json_log(Spec()))
    del data["end_time"]
    data["results"] = data["results"][:10]
    path = write(tmp_path, "x.json", json.dumps(data))
    (verdict,) = judge_log(path, Context(load_catalog().get(P5), 0.8, None))
    assert {"stopped-early", "no-large-message"} <= codes(verdict)
    stopped = next(reason for reason in verdict.reasons if reason.code == "stopped-early")
    assert "no end_time" in stopped.text and "4 KiB of the 16 GiB" in stopped.text


def test_min_fraction_out_of_range_is_a_usage_error(tmp_path):
    path = write(tmp_path, "a.log", text_log(Spec()))
    result = gate(path, "--min-fraction", "0")
    assert result.exit_code == 2 and result.output.startswith(
        "error gpucluster gate: --min-fraction: must be at least 0.01"
    )


def test_a_report_path_that_is_a_file_exits_2_before_any_verdict(tmp_path):
    path = write(tmp_path, "a.log", text_log(Spec()))
    taken = write(tmp_path, "taken", "")
    result = gate(path, "--instance-type", P5, "--report", taken)
    assert result.exit_code == 2
    assert "is a file, not a directory" in result.output
    assert "GO" not in result.output and "all_reduce_perf" not in result.output

"""`gpucluster` as a new user meets it: help, version, one error path for every verb."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.tables import print_table, table
from tests.conftest import REPO

DEFAULT = REPO / "examples" / "default.yaml"
VERBS_WITH_CONFIG = ("validate", "synth", "render", "diff")


def run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_dash_h_and_version():
    assert run("-h").exit_code == 0
    assert "Usage: gpucluster" in run("-h").output
    for verb in ("validate", "synth", "render", "diff", "scan", "schema"):
        result = run(verb, "-h")
        assert result.exit_code == 0, result.output
        # Human metavars, not Python type names.
        assert not re.search(r"<(path|bool|list\[|str)", result.output), result.output
        assert "{" not in result.output.splitlines()[0]
    version = run("--version")
    assert version.exit_code == 0
    assert re.fullmatch(r"gpucluster \d+\.\d+\.\d+\n", version.output)


@pytest.mark.parametrize(
    ("args", "verb"),
    [
        (["render"], "render"),
        (["validate", "--nope", "x.yaml"], "validate"),
        (["diff", str(DEFAULT)], "diff"),
        (["no-such-verb"], None),
        (["synth", str(DEFAULT), "-o"], "synth"),
    ],
)
def test_usage_error_is_one_line_exit_2_and_points_at_help(args, verb):
    result = run(*args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    path = f"gpucluster {verb}" if verb else "gpucluster"
    assert lines[0].startswith(f"error {path}: ")
    assert lines[0].endswith(f"see `{path} -h`")


def _bad_inputs(tmp_path):
    directory = tmp_path / "adir"
    directory.mkdir()
    undecodable = tmp_path / "latin1.yaml"
    undecodable.write_bytes(b"name: caf\xe9\n")
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n")
    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("name: demo\nregion: us-east-2\navailability_zone: us-east-2a\ncompute_groups: []\n")
    return {
        "missing": (tmp_path / "missing.yaml", "does not exist"),
        "directory": (directory, "is a directory"),
        "unreadable": (undecodable, "is not UTF-8"),
        "broken yaml": (broken, "(yaml) line"),
        "invalid": (invalid, "compute_groups"),
    }


@pytest.mark.parametrize("verb", VERBS_WITH_CONFIG)
def test_every_verb_reports_bad_config_the_same_way(tmp_path, verb):
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    for name, (path, expected) in _bad_inputs(tmp_path).items():
        extra = ["--baseline", str(baseline)] if verb == "diff" else []
        if verb in ("synth", "render"):
            extra = ["-o", str(tmp_path / f"out-{verb}")]
        result = run(verb, str(path), *extra)
        assert result.exit_code == 2, (name, result.output)
        assert "Traceback" not in result.output
        errors = [line for line in result.output.splitlines() if line.startswith("error ")]
        assert errors, (name, result.output)
        assert all(line.startswith(f"error {path}: ") for line in errors), (name, result.output)
        assert expected in result.output, (name, result.output)
        assert f"error gpucluster {verb}:" not in result.output
    assert not (tmp_path / f"out-{verb}").exists() or verb not in ("synth", "render")


def test_render_defaults_to_rendered_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run("render", str(DEFAULT))
    assert result.exit_code == 0, result.output
    assert (tmp_path / "rendered" / "user-data" / "head.sh").is_file()
    assert "rendered into rendered" in result.output


@pytest.mark.parametrize("verb", ["render", "synth"])
def test_output_that_is_a_file_is_bad_input(tmp_path, verb):
    target = tmp_path / "afile"
    target.write_text("")
    result = run(verb, str(DEFAULT), "-o", str(target))
    assert result.exit_code == 2, result.output
    assert f"error gpucluster {verb}: --output: {target} is a file, not a directory" in result.output
    assert "Traceback" not in result.output


def test_diff_baseline_problems_are_bad_input(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    not_template = tmp_path / "list"
    not_template.mkdir()
    (not_template / "demo-network.template.json").write_text("[]")
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "demo-network.template.json").write_bytes(b"\xff\xfe{")
    cases = {
        tmp_path / "nowhere": "not a directory",
        empty: "holds no *.template.json",
        not_template: "is not a CloudFormation template",
        binary: "cannot be read",
    }
    for baseline, expected in cases.items():
        result = run("diff", str(DEFAULT), "--baseline", str(baseline))
        assert result.exit_code == 2, (baseline, result.output)
        assert "(--baseline)" in result.output and expected in result.output, result.output
        assert "Traceback" not in result.output


def test_scan_of_missing_path_is_bad_input(tmp_path):
    result = run("scan", str(tmp_path / "nowhere"))
    assert result.exit_code == 2
    assert f"error {tmp_path / 'nowhere'}: (path): does not exist" in result.output


def test_an_unexpected_failure_is_one_line_exit_3_not_a_traceback(monkeypatch):
    import gpucluster.cli.root as cli

    def explode(path):
        raise KeyError("surprise")

    monkeypatch.setattr(cli, "load_config", explode)
    monkeypatch.delenv("GPUCLUSTER_DEBUG", raising=False)
    result = run("validate", str(DEFAULT))
    assert result.exit_code == 3
    assert result.output.startswith("error gpucluster validate: internal error KeyError: 'surprise'; ")
    assert "GPUCLUSTER_DEBUG=1" in result.output
    assert "Traceback" not in result.output


def test_console_script_exit_codes_without_a_terminal(tmp_path):
    """The installed entry point, through a pipe as in CI."""
    exe = [sys.executable, "-m", "gpucluster"]
    usage = subprocess.run([*exe, "render"], capture_output=True, text=True)
    assert usage.returncode == 2 and usage.stderr.startswith("error gpucluster render: CONFIG: is required;")
    bad = subprocess.run([*exe, "validate", str(tmp_path)], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith(f"error {tmp_path}: (file): is a directory")
    assert "Traceback" not in usage.stderr + bad.stderr


def test_tables_never_cut_a_value_on_a_narrow_console():
    console = Console(record=True, width=20, color_system=None)
    rows = [("gpu", "p5.48xlarge", "capacity-block"), ("LustreFileSystem", "AWS::FSx::FileSystem", "x")]
    print_table(console, table("compute groups", ("group", "instance type", "capacity"), rows))
    text = console.export_text()
    for row in rows:
        for value in row:
            assert value in text, text
    assert "…" not in text
    assert console.width == 20


def test_synth_summary_bytes_are_the_files_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    out = tmp_path / "cdk.out"
    result = run("synth", str(DEFAULT), "-o", str(out))
    assert result.exit_code == 0, result.output
    for path in out.glob("*.template.json"):
        stack = path.name.removesuffix(".template.json")
        size = f"{path.stat().st_size:,}"
        assert re.search(rf"{stack}\s+│\s+\d+/500\s+│\s+{size}\b", result.output), result.output
    assert "p5.48xlarge" in result.output and "capacity-block" in result.output
    assert "…" not in result.output
    assert json.loads((out / "manifest.json").read_text())


def test_diff_allow_replace_says_what_will_be_replaced_not_safe():
    from gpucluster.diff import diff_templates, print_report
    from tests.diff_stacks import FSX, REGION, STORAGE, edited, lustre, stacks

    current = edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200))
    console = Console(record=True, width=60, color_system=None)
    report = diff_templates(stacks(), current, {FSX}, region=REGION)
    print_report(report, console)
    text = console.export_text()
    assert report.exit_code == 0
    assert "safe:" not in text
    assert f"allowed by --allow-replace: {STORAGE}/{FSX} (AWS::FSx::FileSystem) WILL BE REPLACED" in text
    assert "not safe, but allowed: 1 resource(s)" in text
    # Narrow console: the logical id and type are still whole in the table.
    assert re.search(rf"│ {FSX}\s+│ AWS::FSx::FileSystem\s+│", text), text

    untouched = Console(record=True, width=200, color_system=None)
    print_report(diff_templates(stacks(), stacks(), region=REGION), untouched)
    assert "safe: no resource that holds data is replaced or deleted" in untouched.export_text()


def test_diff_lines_stay_whole_in_a_narrow_ci_log(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    baseline = tmp_path / "baseline"
    assert run("synth", str(DEFAULT), "-o", str(baseline)).exit_code == 0
    result = run("diff", str(DEFAULT), "--baseline", str(baseline), "--allow-replace", "LustreFileSytem")
    assert result.exit_code == 0, result.output
    assert re.search(
        r"^--allow-replace LustreFileSytem: no stateful resource .* check the spelling$",
        result.output,
        re.MULTILINE,
    ), result.output
    assert "safe: no resource that holds data is replaced or deleted" in result.output

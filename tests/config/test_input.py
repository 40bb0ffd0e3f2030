"""The one YAML reader: bounded input, duplicate keys, Slurm times, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpucluster.bad_input import BadInput
from gpucluster.cli import app
from gpucluster.config import yaml_input
from gpucluster.config.loader import load_config, parse_config
from tests.conftest import REPO

DEFAULT_TEXT = (REPO / "examples" / "default.yaml").read_text()
runner = CliRunner()


def problems_of(text: str) -> list[str]:
    with pytest.raises(BadInput) as info:
        parse_config(text, "c.yaml")
    return info.value.problems


def deep(levels: int) -> str:
    return "".join(f"{'  ' * i}k{i}:\n" for i in range(levels)) + "  " * levels + "x: 1\n"


def test_500_deep_yaml_is_a_finding_not_a_recursion_error(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text(deep(500))
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "nested deeper than 32 levels" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_flow_style_depth_is_bounded_too():
    assert "nested deeper than 32 levels" in problems_of("a: " + "[" * 500)[0]


def test_cdk_app_reports_deep_yaml_with_exit_2(tmp_path):
    """app.py (what `cdk synth` runs) reads through the same reader."""
    path = tmp_path / "deep.yaml"
    path.write_text(deep(500))
    env = {**os.environ, "CDK_CONTEXT_JSON": json.dumps({"config": str(path)}), "CDK_OUTDIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "app.py"], cwd=REPO, env=env, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert f"error {path}: (yaml) line" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_duplicate_keys_name_key_and_both_lines():
    text = DEFAULT_TEXT + "name: other\n"
    problems = problems_of(text)
    first = 1 + DEFAULT_TEXT.splitlines().index(
        next(line for line in DEFAULT_TEXT.splitlines() if line.startswith("name:"))
    )
    last = len(text.splitlines())
    assert problems == [
        f"(yaml) line {last}: key 'name' is repeated (first on line {first}); YAML would silently "
        "keep only the last one, so remove one of them"
    ]


def test_merge_keys_are_not_duplicates():
    data = yaml_input.read_yaml("base: &b {x: 1}\nuse:\n  <<: *b\n  y: 2\n")
    assert data == {"base": {"x": 1}, "use": {"x": 1, "y": 2}}


def test_huge_input_refused_before_parsing(tmp_path):
    path = tmp_path / "junk.yaml"
    path.write_bytes(b"- junk: [\n" * (10 * 1024 * 1024 // 10))
    started = time.monotonic()
    with pytest.raises(BadInput) as info:
        load_config(path)
    assert time.monotonic() - started < 2
    assert info.value.problems == [
        "(file): 10,485,760 bytes (10.0 MiB) is over the 1,048,576 bytes (1.0 MiB) limit for a config; "
        "pass the cluster's YAML file (a few KiB), not another file"
    ]


def test_value_count_is_bounded():
    assert "more than 20000 values" in problems_of("- 1\n" * 25_000)[0]


def test_alias_expansion_is_bounded():
    text = "a: &a [" + ",".join(["1"] * 100) + "]\nb: &b [" + ",".join(["*a"] * 100) + "]\n"
    text += "c: [" + ",".join(["*b"] * 100) + "]\n"
    assert "once aliases are expanded" in problems_of(text)[0]


def test_at_most_20_problems_then_a_count():
    text = DEFAULT_TEXT + "".join(f"unknown{i}: 1\n" for i in range(45))
    problems = problems_of(text)
    assert len(problems) == 21
    assert problems[-1] == "... and 25 more problems"


def test_binary_and_control_characters_are_reported():
    assert problems_of("name: !!binary aGVsbG8=\n") == [
        "(yaml) line 1, column 7: binary data (!!binary) is not a setting; write the value as plain text"
    ]
    assert "control character U+0007" in problems_of("name: a\x07b\n")[0]


def test_not_utf8_is_reported_with_line(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: demo\nregion: caf\xe9\n")
    with pytest.raises(BadInput) as info:
        load_config(path)
    assert info.value.problems == ["(file) line 2: byte 23 is not UTF-8; save the config as UTF-8"]


def test_slurm_times_stay_strings():
    data = yaml_input.read_yaml("a: 1:00:00\nb: 2-00:00:00\nc: 30:00\nd: 0755\ne: 12\nf: 1.5\n")
    assert data == {"a": "1:00:00", "b": "2-00:00:00", "c": "30:00", "d": "0755", "e": 12, "f": 1.5}


def test_unquoted_account_id_hint_is_shown():
    problems = problems_of(DEFAULT_TEXT + "account: 123456789012\n")
    assert problems == [
        "account: 123456789012 was read as a number; quote the 12-digit account id, "
        'e.g. account: "123456789012"'
    ]


def test_account_with_leading_zero_unquoted_keeps_its_digits():
    cfg = parse_config(DEFAULT_TEXT + "account: 012345678901\n", "c.yaml")
    assert cfg.account == "012345678901"


def test_every_example_reads_the_same_as_pyyaml():
    for path in sorted((REPO / "examples").glob("*.yaml")):
        assert yaml_input.read_yaml(path.read_text()) == yaml.safe_load(path.read_text()), path.name


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_any_bytes_give_a_clear_error_or_a_model(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "c.yaml"
    path.write_bytes(raw)
    try:
        load_config(path)
    except BadInput as exc:
        assert 1 <= len(exc.problems) <= 21
        for problem in exc.problems:
            assert problem.strip() and "\n" not in problem and "Traceback" not in problem


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200))
def test_bytes_spliced_into_a_valid_config_never_traceback(tmp_path_factory, raw):
    path = tmp_path_factory.mktemp("fuzz") / "c.yaml"
    cut = len(raw) % (len(DEFAULT_TEXT) + 1)
    path.write_bytes(DEFAULT_TEXT.encode()[:cut] + raw + DEFAULT_TEXT.encode()[cut:])
    try:
        load_config(path)
    except BadInput as exc:
        assert exc.problems and all("\n" not in p for p in exc.problems)

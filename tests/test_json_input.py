"""gpucluster.json_input: the one reader of JSON a person hands gpucluster. Depth is refused
before anything walks the document; every verb that reads such a file says so in one line."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.json_input import MAX_DEPTH, JsonProblem, parse_json

DEEPER_THAN_PYTHON = "[" * 5000 + "]" * 5000


def nested(levels: int) -> str:
    return "[" * (levels - 1) + '{"a": 1}' + "]" * (levels - 1)


def test_json_as_deep_as_the_limit_is_read():
    assert parse_json(nested(MAX_DEPTH))


@pytest.mark.parametrize(
    "text", [nested(MAX_DEPTH + 1), DEEPER_THAN_PYTHON], ids=["past-the-limit", "past-python"]
)
def test_deeper_json_is_one_problem(text):
    with pytest.raises(JsonProblem) as caught:
        parse_json(text)
    assert caught.value.what == f"nested deeper than the {MAX_DEPTH} levels gpucluster reads"
    assert caught.value.line is None


def test_broken_json_names_its_line():
    with pytest.raises(JsonProblem) as caught:
        parse_json('{\n"a": 1,\n}')
    assert (caught.value.what, caught.value.line) == (
        "not JSON (Expecting property name enclosed in double quotes)",
        3,
    )


def test_an_integer_past_pythons_digits_is_one_problem():
    with pytest.raises(JsonProblem, match=r"^not JSON \(Exceeds the limit"):
        parse_json("1" * 5000)


def test_topology_render_refuses_deep_json_with_exit_2(tmp_path):
    describe = tmp_path / "describe.json"
    describe.write_text(DEEPER_THAN_PYTHON)
    result = CliRunner().invoke(app, ["topology", "render", str(describe)])
    assert result.exit_code == 2, result.output
    assert f"error {describe}: (file): nested deeper than the {MAX_DEPTH} levels" in result.output
    assert "Traceback" not in result.output


def test_diff_refuses_a_deep_baseline_with_exit_2(tmp_path):
    baseline = tmp_path / "baseline"
    baseline.mkdir()
    (baseline / "demo-network.template.json").write_text(json.dumps({"Resources": json.loads(nested(150))}))
    result = CliRunner().invoke(app, ["diff", "examples/default.yaml", "--baseline", str(baseline)])
    assert result.exit_code == 2, result.output
    assert "nested deeper than the 100 levels gpucluster reads; regenerate the baseline" in result.output
    assert "Traceback" not in result.output

"""One error format for every verb: `error SUBJECT: what is wrong; how to fix it`, one
line, exit 2 for the command line whether the parser or the verb refused it, with the
verb and the option as the subject (README, "Every verb ends the same way")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from gpucluster.cli import app
from tests.conftest import REPO

DEFAULT = str(REPO / "examples" / "default.yaml")
MIXED = str(REPO / "examples" / "mixed.yaml")
# error gpucluster VERB: --OPTION (or ARGUMENT): what is wrong; how to fix it
OPTION_ERROR = re.compile(
    r"error (?P<verb>gpucluster[a-z ]*): (?P<field>--[a-z-]+|-[a-z]|[A-Z_.]+): [^;]+; .+"
)


def _leaves(command: Any, path: list[str]) -> Iterator[str]:
    children = getattr(command, "commands", None)
    if not children:
        yield " ".join(path)
        return
    for name, child in children.items():
        yield from _leaves(child, [*path, name])


VERBS = sorted(_leaves(typer.main.get_command(app), []))
# A value each verb refuses itself (after the parser accepted it), and the option it blames.
REFUSED_VALUES = {
    "capacity find": (
        ["--instance-type", "p5.48xlarge", "--count", "3", "--days", "7", "--region", "us-east-2"],
        "--count",
    ),
    "capacity show": (["cr-0123456789abcdef0"], "--region"),
    "capacity buy": (["cb-0123456789abcdef0", "--config", MIXED, "--group", "nope"], "--group"),
    "gate": ([DEFAULT, "--instance-type", "p9.huge"], "--instance-type"),
    "plan": (
        ["--config", DEFAULT, "--tp", "8", "--pp", "1", "--dp", "64", "--micro-batch", "1", "--accum", "1"],
        "--dp",
    ),
    "synth": ([DEFAULT, "-o", DEFAULT], "--output"),
    "users access": ([MIXED, "--role", "eve=EveRole"], "--role"),
}
# A value the parser refuses, and the option it names.
PARSER_REFUSALS = {
    "capacity wait": (["--timeout", "0"], "--timeout"),
    "capacity extend": (["--config", DEFAULT, "--days", "x"], "--days"),
    "gate": ([DEFAULT, "--min-fraction", "2"], "--min-fraction"),
    "render": ([], "CONFIG"),
    "synth": ([DEFAULT, "-o"], "-o"),
}


def _line(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    lines = [line for line in result.stderr.splitlines() if not line.startswith("warning ")]
    assert len(lines) == 1, result.output
    return result.exit_code, lines[0]


def test_the_verbs_are_the_app_s():
    assert {"capacity find", "container render", "topology annotations", "topology render"} <= set(
        VERBS
    ) and len(VERBS) == 21
    assert set(REFUSED_VALUES) | set(PARSER_REFUSALS) <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_an_unknown_option_of_every_verb_has_the_one_shape(verb: str) -> None:
    code, line = _line([*verb.split(), "--no-such-option"])
    assert code == 2
    match = OPTION_ERROR.fullmatch(line)
    assert match, line
    assert match["verb"] == f"gpucluster {verb}" and match["field"] == "--no-such-option"
    assert line.endswith(f"; see `gpucluster {verb} -h`")


@pytest.mark.parametrize(("verb", "case"), [(verb, case) for verb, case in PARSER_REFUSALS.items()])
def test_a_value_the_parser_refuses_has_the_one_shape(verb: str, case: tuple[list[str], str]) -> None:
    args, option = case
    code, line = _line([*verb.split(), *args])
    assert code == 2
    match = OPTION_ERROR.fullmatch(line)
    assert match and match["verb"] == f"gpucluster {verb}" and match["field"] == option, line


@pytest.mark.parametrize(("verb", "case"), [(verb, case) for verb, case in REFUSED_VALUES.items()])
def test_a_value_the_verb_refuses_has_the_same_shape(verb: str, case: tuple[list[str], str]) -> None:
    args, option = case
    code, line = _line([*verb.split(), *args])
    assert code == 2
    match = OPTION_ERROR.fullmatch(line)
    assert match and match["verb"] == f"gpucluster {verb}" and match["field"] == option, line


@pytest.mark.parametrize(
    ("args", "plain"),
    [
        (
            ["capacity", "find", "--count", "two"],
            "--count: 'two' is not a whole number; write digits, like 2",
        ),
        (["gate", DEFAULT, "--min-fraction", "2"], "--min-fraction: must be at most 1.0 (it is 2); lower it"),
        (
            ["capacity", "wait", "--timeout", "0"],
            "--timeout: must be at least 1 (it is 0); raise it to 1 or more",
        ),
    ],
)
def test_option_values_are_refused_in_plain_words(args: list[str], plain: str) -> None:
    """Not pydantic's 'Input should be ...', 'unable to parse string as an integer'."""
    code, line = _line(args)
    assert code == 2 and plain in line, line
    assert "Input should" not in line and "unable to parse" not in line


def test_a_bug_is_the_same_shape_with_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    import gpucluster.cli.root as root

    def explode(path: object) -> None:
        raise KeyError("surprise")

    monkeypatch.setattr(root, "load_config", explode)
    monkeypatch.delenv("GPUCLUSTER_DEBUG", raising=False)
    code, line = _line(["validate", DEFAULT])
    assert code == 3
    assert line.startswith("error gpucluster validate: internal error KeyError: 'surprise'; this is a bug")


@pytest.mark.parametrize("group", ["", "capacity", "ami", "container", "topology", "users"])
def test_no_verb_prints_the_help_then_the_one_line(group: str) -> None:
    result = CliRunner().invoke(app, group.split())
    path = f"gpucluster {group}".strip()
    assert result.exit_code == 2
    assert "Commands:" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1] == (
        f"error {path}: a verb is required; pick one of the commands above"
    )

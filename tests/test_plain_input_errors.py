"""Input problems in plain words with their fix, not the parsers' wording: pydantic's
('List should have at least 1 item', 'unable to parse string as an integer', 'Input
should be less than or equal to 1'), PyYAML's ('could not determine a constructor'),
a compressed log called 'binary data', standard input called a missing file."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.bad_input import BadInput
from gpucluster.cli import app
from gpucluster.config.loader import parse_config
from tests.conftest import REPO
from tests.nccl_logs import Spec, text_log

DEFAULT = REPO / "examples" / "default.yaml"
BASE = DEFAULT.read_text()


def problems(text: str) -> list[str]:
    with pytest.raises(BadInput) as caught:
        parse_config(text, "cluster.yaml")
    return caught.value.problems


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            re.sub(r"compute_groups:.*?(?=\nstorage:)", "compute_groups: []", BASE, flags=re.S),
            "compute_groups: needs at least 1 entry (it has 0); add one (see examples/default.yaml)",
        ),
        (
            BASE.replace("count: 2", "count: two", 1),
            "compute_groups.0.count: must be a whole number, not text ('two'); write digits, like 2",
        ),
        (
            BASE + "\nvalidation: {min_fraction: 1.5}\n",
            "validation.min_fraction: must be at most 1.0 (it is 1.5); lower it to 1.0 or less",
        ),
        (
            BASE.replace("name: demo", "name: !!python/object:os.system x", 1),
            "(yaml) line 3, column 7: the tag !!python/object:os.system is not allowed in a config "
            "(YAML tags build objects or run code, and no setting takes one); "
            "remove the tag and write the value as plain text",
        ),
    ],
)
def test_config_problems_are_plain_with_a_fix(text: str, expected: str) -> None:
    assert problems(text) == [expected]


def test_standard_input_is_refused_as_a_config_clearly() -> None:
    result = CliRunner().invoke(app, ["validate", "-"], input=BASE)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error -: (file): a config is read from a file, not from standard input; "
        "save it to a file and pass that file's path"
    ]


def test_a_gzipped_log_is_named_compressed_with_the_command_to_unpack_it(tmp_path: Path) -> None:
    log = tmp_path / "all_reduce.log.gz"
    log.write_bytes(gzip.compress(text_log(Spec()).encode()))
    result = CliRunner().invoke(app, ["gate", str(log), "--instance-type", "p5.48xlarge"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"error {log}: (file): is compressed (gunzip unpacks it), not nccl-tests output; "
        f"gunzip it first (`gunzip -k {log}`) and pass the log it writes"
    ]


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ({"type": "int_type", "input": True}, ("true is not a whole number", "write digits, like 2")),
        ({"type": "bool_parsing", "input": "yes"}, ("'yes' is not true or false", "write true or false")),
        (
            {"type": "too_long", "input": [1, 2, 3], "ctx": {"max_length": 2, "actual_length": 3}},
            ("takes at most 2 entries (it has 3)", "remove 1 of them"),
        ),
        (
            {"type": "greater_than", "input": 0, "ctx": {"gt": 0}},
            ("must be more than 0 (it is 0)", "raise it above 0"),
        ),
        ({"type": "some_new_type", "input": 1}, None),
    ],
)
def test_pydantic_errors_in_plain_words(error: dict, expected: tuple[str, str] | None) -> None:
    from gpucluster.plain_messages import plain

    assert plain(error) == expected

"""Every list of IPv4 ranges in the config (found in its schema, so a new one is covered too)
refuses ranges that together admit every address, as it refuses 0.0.0.0/0: exit 2 through
`gpucluster validate`, one line naming the field."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.config import ClusterConfig
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
EVERY_ADDRESS = [
    ["0.0.0.0/0"],
    ["0.0.0.0/1", "128.0.0.0/1"],
    ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/2", "192.0.0.0/2"],
    # Overlapping, unordered, with a small range among them: the union is what counts.
    ["128.0.0.0/1", "10.20.0.0/16", "0.0.0.0/1", "64.0.0.0/2"],
    ["0.0.0.0/1", "128.0.0.0/2", "192.0.0.0/3", "224.0.0.0/3"],
]
# A quarter of the addresses left out, or most of them: admitted as written.
LOADS = [["10.20.0.0/16", "192.168.0.0/24"], ["0.0.0.0/1", "128.0.0.0/2"], []]


def _cidr_lists(schema: dict[str, Any], defs: dict[str, Any], path: tuple = ()) -> Iterator[tuple]:
    """The path (keys, 0 for a list's entries) of every list of IPv4 networks in the schema."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    for option in schema.get("anyOf", []):
        yield from _cidr_lists(option, defs, path)
    if schema.get("type") == "array":
        items = schema.get("items", {})
        if items.get("format") == "ipv4network":
            yield path
        else:
            yield from _cidr_lists(items, defs, (*path, 0))
    for key, value in schema.get("properties", {}).items():
        yield from _cidr_lists(value, defs, (*path, key))


SCHEMA = ClusterConfig.model_json_schema()
FIELDS = sorted(set(_cidr_lists(SCHEMA, SCHEMA["$defs"])))


def test_the_schema_walk_finds_the_rest_apis_list():
    assert ("rest_api", "allow_cidrs") in FIELDS


def _validate(tmp_path: Path, field: tuple, cidrs: list[str]):
    data = copy.deepcopy(DEFAULT)
    parent: Any = data
    for key in field[:-1]:
        if isinstance(key, str) and parent.get(key) is None:
            parent[key] = {}  # a section that is off turns on, with its defaults
        parent = parent[key]
    parent[field[-1]] = cidrs
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(data))
    return config, CliRunner().invoke(app, ["validate", str(config)])


def _name(field: tuple) -> str:
    return ".".join(str(key) for key in field)


@pytest.mark.parametrize("cidrs", EVERY_ADDRESS, ids=" + ".join)
@pytest.mark.parametrize("field", FIELDS, ids=_name)
def test_ranges_that_cover_every_address_are_refused_naming_the_field(tmp_path, field, cidrs):
    config, result = _validate(tmp_path, field, cidrs)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error ")]
    listed = ", ".join(cidrs)
    assert errors == [
        f"error {config}: {_name(field)}: {listed}{'' if len(cidrs) == 1 else ' together'} would admit "
        "every address; list only the networks your clients are in (e.g. your VPN's range)"
    ]


@pytest.mark.parametrize("cidrs", LOADS, ids=lambda cidrs: " + ".join(cidrs) or "none")
@pytest.mark.parametrize("field", FIELDS, ids=_name)
def test_ranges_that_leave_addresses_out_load(tmp_path, field, cidrs):
    _, result = _validate(tmp_path, field, cidrs)
    assert result.exit_code == 0, result.output

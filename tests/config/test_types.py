"""Strict types (gpucluster/config/fields.py StrictModel): a value keeps the type YAML gave
it. A boolean is not a number, text is not a boolean or a number, and each refusal names
the field, the type given and the type expected."""

from __future__ import annotations

import copy
from datetime import date, datetime

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import parse_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())


def problems_in(data: dict) -> list[str]:
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def with_value(path: tuple, value: object) -> dict:
    data = copy.deepcopy(DEFAULT)
    node = data
    for key in path[:-1]:
        node = node[key] if isinstance(node, list) else node.setdefault(key, {})
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        # The three the issue found: each was converted (count 1, efa true) or misreported.
        (
            ("compute_groups", 0, "count"),
            True,
            "compute_groups.0.count: must be a whole number, not a boolean (true); "
            "a boolean is not a number, write the number itself",
        ),
        (
            ("compute_groups", 0, "efa"),
            "yes",
            "compute_groups.0.efa: must be true or false, not text ('yes'); "
            "write true or false without quotes",
        ),
        (
            ("head_node", "root_volume_gib"),
            True,
            "head_node.root_volume_gib: must be a whole number, not a boolean (true); "
            "a boolean is not a number, write the number itself",
        ),
        (
            ("storage", "fsx_lustre", "storage_gib"),
            "4800",
            "storage.fsx_lustre.storage_gib: must be a whole number, not text ('4800'); "
            "write the number without quotes",
        ),
        (
            ("login_nodes", "count"),
            1.5,
            "login_nodes.count: must be a whole number, not a number (1.5); write digits, like 2",
        ),
        (
            ("storage", "fsx_lustre", "efa"),
            1,
            "storage.fsx_lustre.efa: must be true or false, not a number (1); write true or false",
        ),
        (
            ("validation", "min_fraction"),
            True,
            "validation.min_fraction: must be a number, not a boolean (true); "
            "a boolean is not a number, write the number itself",
        ),
        (
            ("software", "slurm"),
            25.11,
            "software.slurm: must be text, not a number (25.11); "
            "write it as text (quote it if YAML reads it as something else)",
        ),
        # Lax mode turned these numbers into a network and a time in 1970.
        (
            ("network", "cidr"),
            10,
            "network.cidr: must be a CIDR block like 10.80.0.0/16, not a number (10)",
        ),
        (
            ("compute_groups", 0, "capacity", "start"),
            1700000000,
            "compute_groups.0.capacity.start: must be a date and time like 2026-12-01T11:30:00Z, "
            "not a number (1700000000); write the date and time in UTC, as EC2 reports it",
        ),
        (
            ("storage", "fsx_lustre", "metadata_iops"),
            True,
            "storage.fsx_lustre.metadata_iops: must be a whole number, not a boolean (true); "
            "a boolean is not a number, write the number itself",
        ),
        (
            ("head_node",),
            5,
            "head_node: must be a mapping of settings, not a number (5); "
            "write its settings indented under the key",
        ),
    ],
)
def test_a_wrong_type_is_refused_naming_field_given_and_expected(path, value, expected):
    assert problems_in(with_value(path, value)) == [expected]


def _leaves(node: object, prefix: tuple = ()):
    if isinstance(node, dict) and node:
        for key, child in node.items():
            yield from _leaves(child, (*prefix, key))
    elif isinstance(node, list) and node:
        for index, child in enumerate(node):
            yield from _leaves(child, (*prefix, index))
    elif node is not None and not isinstance(node, dict | list):
        yield prefix, node


def _wrong_type(value: object) -> object:
    """A value of another YAML type that lax validation would have converted or misread."""
    if isinstance(value, bool):
        return "true"
    if isinstance(value, int | float):
        return True
    if isinstance(value, datetime | date):
        return 5
    return 12


# Every field of the default config with its default values filled in, as YAML would carry them.
EVERY_FIELD = list(_leaves(ClusterConfig.model_validate(DEFAULT).model_dump(mode="json", exclude={"tags"})))
# The one field where a value of another type is also a valid choice.
EITHER_TYPE = {("compute_groups", 0, "placement_group")}


@pytest.mark.parametrize(
    ("path", "value"), [leaf for leaf in EVERY_FIELD if leaf[0] not in EITHER_TYPE], ids=str
)
def test_every_field_refuses_a_value_of_another_type(path, value):
    field = ".".join(map(str, path))
    if isinstance(value, str) and path[-2:] in {("capacity", "start"), ("capacity", "end")}:
        value = datetime.fromisoformat(value)  # YAML's own timestamp type, as users write it
    problems = problems_in(with_value(path, _wrong_type(value)))
    assert problems, f"{field}: {_wrong_type(value)!r} was accepted"
    # A discriminator (capacity's type) is reported on the section it selects.
    start = ".".join(map(str, path[:-1])) + ": type " if path[-1] == "type" else f"{field}: "
    assert any(p.startswith(start) for p in problems), problems


def test_quoted_timestamps_and_cidr_text_are_still_read():
    data = with_value(("compute_groups", 0, "capacity", "start"), "2027-06-07T11:30:00Z")
    data["network"]["cidr"] = "10.81.0.0/16"
    cfg = parse_config(yaml.safe_dump(data), "c.yaml")
    assert cfg.compute_groups[0].capacity.start == datetime.fromisoformat("2027-06-07T11:30:00+00:00")
    assert str(cfg.network.cidr) == "10.81.0.0/16"

"""Arbitrary input never produces a traceback: only a BadInput with readable lines."""

from __future__ import annotations

import copy

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpucluster.bad_input import BadInput
from gpucluster.config.loader import parse_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["p5.48xlarge", "capacity-block", "cr-0a1b2c3d4e5f67890", "2026-12-07T11:30:00Z", "LZ4"]),
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)


def _parse(text: str) -> None:
    try:
        parse_config(text, "fuzz.yaml")
    except BadInput as exc:
        assert exc.problems
        for problem in exc.problems:
            assert isinstance(problem, str) and problem.strip()
            assert "\n" not in problem
            assert "Traceback" not in problem


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300))
def test_arbitrary_text_never_tracebacks(text):
    _parse(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values)
def test_arbitrary_yaml_documents_never_traceback(document):
    _parse(yaml.safe_dump(document))


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, child in node.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            yield from _paths(child, (*prefix, index))


DEFAULT_PATHS = [p for p in _paths(DEFAULT) if p]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(DEFAULT_PATHS), values)
def test_mutating_any_field_of_the_default_never_tracebacks(path, replacement):
    data = copy.deepcopy(DEFAULT)
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = replacement
    _parse(yaml.safe_dump(data))

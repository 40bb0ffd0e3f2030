"""The resolved model carries values, never the config it came from: a renderer that could
reach `resolved.config` would derive again what resolve() decided (issue 40). Every dataclass
reachable from ResolvedCluster is walked, so a nested one cannot smuggle the config back in."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.resolved import ResolvedCluster, ResolvedGroup

WHOLE_CONFIGS = (ClusterConfig, ComputeGroupConfig)


def _types_in(hint: object) -> set[object]:
    """`hint` and every type it is built from (X | None, tuple[X, ...], Mapping[K, V])."""
    found = {hint}
    for arg in typing.get_args(hint):
        found |= _types_in(arg)
    return found


def _reachable(cls: type) -> list[type]:
    seen: list[type] = []
    pending = [cls]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.append(current)
        for hint in typing.get_type_hints(current).values():
            pending.extend(t for t in _types_in(hint) if isinstance(t, type) and dataclasses.is_dataclass(t))
    return seen


MODELS = _reachable(ResolvedCluster)


def test_the_walk_reaches_the_groups_and_the_nested_models() -> None:
    names = {cls.__name__ for cls in MODELS}
    assert {"ResolvedCluster", "ResolvedGroup", "ResolvedAccounting", "ResolvedDatabase"} <= names
    assert ResolvedGroup in MODELS


@pytest.mark.parametrize("model", MODELS, ids=lambda cls: cls.__name__)
def test_no_resolved_model_has_a_config_field(model: type) -> None:
    assert "config" not in {field.name for field in dataclasses.fields(model)}
    assert not isinstance(getattr(model, "config", None), property)


@pytest.mark.parametrize("model", MODELS, ids=lambda cls: cls.__name__)
def test_no_resolved_model_holds_the_whole_config_or_a_whole_group(model: type) -> None:
    for name, hint in typing.get_type_hints(model).items():
        whole = [t for t in _types_in(hint) if t in WHOLE_CONFIGS]
        assert not whole, f"{model.__name__}.{name} is typed {hint}: resolve the values it needs instead"


def test_the_check_sees_a_config_hidden_in_a_union() -> None:
    assert ClusterConfig in _types_in(ClusterConfig | None)
    assert ComputeGroupConfig in _types_in(tuple[ComputeGroupConfig, ...])

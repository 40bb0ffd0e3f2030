"""The config's `health` section: DCGM's level before joining and the Prolog check."""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.config import ClusterConfig
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
runner = CliRunner()


def with_health(tmp_path, health: object):
    data = copy.deepcopy(DEFAULT)
    data["health"] = health
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return runner.invoke(app, ["validate", str(path)])


def test_defaults_run_level_2_before_joining_and_check_in_the_prolog():
    health = ClusterConfig.model_validate(DEFAULT).health
    assert health.dcgm_level_at_join == 2
    assert health.prolog_check is True


@pytest.mark.parametrize("level", [0, 1, 2])
def test_levels_a_node_may_run_before_joining(tmp_path, level):
    result = with_health(tmp_path, {"dcgm_level_at_join": level})
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("level", [3, 4, -1])
def test_other_levels_exit_2_naming_the_field_and_the_job(tmp_path, level):
    result = with_health(tmp_path, {"dcgm_level_at_join": level})
    assert result.exit_code == 2
    assert "health.dcgm_level_at_join" in result.output
    assert "use 0 (off), 1 or 2" in result.output
    assert "dcgm-diag job" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("health", "field"),
    [
        ({"dcgm_level_at_join": "2"}, "health.dcgm_level_at_join"),
        ({"dcgm_level_at_join": True}, "health.dcgm_level_at_join"),
        ({"prolog_check": "yes"}, "health.prolog_check"),
        ({"prolog_chek": False}, "health.prolog_chek"),
    ],
)
def test_wrong_types_and_unknown_keys_exit_2_naming_the_field(tmp_path, health, field):
    result = with_health(tmp_path, health)
    assert result.exit_code == 2
    assert field in result.output

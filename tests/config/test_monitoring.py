"""`monitoring:` in the YAML: a bad address or threshold is exit 2 naming the field."""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from gpucluster.cli import app
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
runner = CliRunner()


def validate(tmp_path, monitoring: dict) -> tuple[int, str]:
    data = copy.deepcopy(DEFAULT)
    data["monitoring"] = monitoring
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    result = runner.invoke(app, ["validate", str(path)])
    return result.exit_code, result.output


@pytest.mark.parametrize(
    "monitoring, expected",
    [
        ({"alarm_email": "oncall"}, "monitoring.alarm_email: 'oncall' is not an email address"),
        ({"alarm_email": "a b@example.com"}, "monitoring.alarm_email:"),
        ({"idle_gpu_minutes": 2}, "monitoring.idle_gpu_minutes: must be at least 5"),
        ({"fsx_free_percent": 0}, "monitoring.fsx_free_percent:"),
        ({"alarm_mail": "ops@example.com"}, "monitoring.alarm_mail"),
    ],
)
def test_bad_monitoring_is_bad_input(tmp_path, monitoring, expected):
    code, output = validate(tmp_path, monitoring)
    assert code == 2, output
    assert expected in output
    assert "Traceback" not in output


def test_an_address_and_thresholds_are_accepted(tmp_path):
    code, output = validate(tmp_path, {"alarm_email": "ops@example.com", "node_unavailable_minutes": 5})
    assert code == 0, output

"""A new munge key under the diff guard: every node reads its key's secret from one SSM
parameter at boot, so a deploy that points it elsewhere leaves nodes booted before and after
with different keys. The diff says so and exits 1 unless that parameter is allowed; the
generated secret that a shared one replaces is detached like any retained secret."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucluster.config import ClusterConfig
from gpucluster.diff import ChangeKind, diff_templates
from gpucluster.diff.verdict import MUNGE_KEY_CHANGE, findings
from gpucluster.synth.app import synthesize
from tests.diff_stacks import EXAMPLE, REGION

SHARED = "arn:aws:secretsmanager:us-east-2:123456789012:secret:shared/munge-key-AbCdEf"
OTHER = "arn:aws:secretsmanager:us-east-2:123456789012:secret:other/munge-key-ZyXwVu"


@pytest.fixture(scope="module")
def shared_variants(tmp_path_factory) -> dict[str, dict[str, dict]]:
    base = yaml.safe_load(EXAMPLE.read_text())
    out = {}
    for label, arn in (("shared", SHARED), ("other", OTHER)):
        data = copy.deepcopy(base)
        data["accounting"] = {"external": "slurmdbd.example.internal", "munge_key_secret": arn}
        out[label] = synthesize(ClusterConfig.model_validate(data), tmp_path_factory.mktemp(label)).templates
    return out


def _munge_parameter(report):
    (change,) = [c for c in report.changes if c.munge_key]
    return change


def test_switching_to_a_shared_key_detaches_the_own_one_and_says_munge_changes(synthesized, shared_variants):
    report = diff_templates(synthesized["default"].templates, shared_variants["shared"], region=REGION)
    secret = next(c for c in report.changes if c.logical_id == "MungeKeySecret")
    assert secret.kind == ChangeKind.RETAINED and secret.blocks
    parameter = _munge_parameter(report)
    assert parameter.changes_munge_key and parameter.blocks
    assert report.exit_code == 1
    lines = findings(report)
    assert any(
        MUNGE_KEY_CHANGE in line and f"--allow-replace {parameter.logical_id}" in line for line in lines
    )
    allowed = diff_templates(
        synthesized["default"].templates,
        shared_variants["shared"],
        {"MungeKeySecret", parameter.logical_id},
        region=REGION,
    )
    assert allowed.exit_code == 0


def test_another_shared_secret_is_a_new_key_and_blocks(shared_variants):
    report = diff_templates(shared_variants["shared"], shared_variants["other"], region=REGION)
    assert [c.logical_id for c in report.blocking] == [_munge_parameter(report).logical_id]
    assert report.exit_code == 1


def test_the_same_shared_secret_changes_nothing(shared_variants):
    report = diff_templates(
        shared_variants["shared"], copy.deepcopy(shared_variants["shared"]), region=REGION
    )
    assert report.changes == () and report.exit_code == 0

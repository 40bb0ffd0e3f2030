"""The head node survives configuration-only changes: its instance and launch template
synthesize byte-for-byte the same, and `gpucluster diff` says so; a real head change
(instance type, AMI) is reported as a head replacement that stops CI unless allowed."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gpucluster import names
from gpucluster.bootstrap.userdata import BundleRef, render_user_data
from gpucluster.cli import app
from gpucluster.config import ClusterConfig
from gpucluster.diff import ChangeKind, diff_templates
from gpucluster.resolved import resolve
from gpucluster.synth.app import synthesize
from tests.diff_stacks import write_cdk_out

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "default.yaml"
PINNED_AMI = "ami-0123456789abcdef0"


def _edited(edit) -> dict:
    data = yaml.safe_load(EXAMPLE.read_text())
    edit(data)
    return data


def _count(count: int):
    return lambda d: d["compute_groups"][0].update(count=count)


def _pinned(ami: str = PINNED_AMI, instance_type: str | None = None):
    def edit(d: dict) -> None:
        d["image"]["ami_id"] = ami
        if instance_type is not None:
            d["head_node"]["instance_type"] = instance_type

    return edit


VARIANTS = {
    "default": lambda d: None,
    "count-1": _count(1),
    "pinned": _pinned(),
    "pinned-new-type": _pinned(instance_type="m7i.4xlarge"),
    "pinned-new-ami": _pinned(ami="ami-0fedcba9876543210"),
}


@pytest.fixture(scope="module")
def variants(tmp_path_factory) -> dict[str, dict[str, dict]]:
    root = tmp_path_factory.mktemp("head-variants")
    return {
        name: synthesize(ClusterConfig.model_validate(_edited(edit)), root / name).templates
        for name, edit in VARIANTS.items()
    }


def _cluster(templates: dict[str, dict]) -> dict[str, dict]:
    return next(t for name, t in templates.items() if name.endswith("-cluster"))["Resources"]


def _head_resources(templates: dict[str, dict]) -> dict[str, dict]:
    return {k: v for k, v in _cluster(templates).items() if k.startswith(names.HEAD_NODE_ID)}


def test_count_change_leaves_the_head_instance_and_launch_template_unchanged(variants):
    before, after = _head_resources(variants["default"]), _head_resources(variants["count-1"])
    assert sorted({v["Type"] for v in before.values()}) == [
        "AWS::EC2::Instance",
        "AWS::EC2::LaunchTemplate",
    ]
    assert after == before
    # The bundle did move: the count reaches the head through the SSM pointer instead.
    pointer = [k for k, v in _cluster(variants["default"]).items() if v["Type"] == "AWS::SSM::Parameter"]
    old = _cluster(variants["default"])
    new = _cluster(variants["count-1"])
    assert any(old[k] != new[k] for k in pointer)


def test_head_user_data_names_no_bundle():
    cfg = ClusterConfig.model_validate(_edited(lambda d: None))
    script = render_user_data(resolve(cfg), "head", None)
    assert names.bundle_parameter(cfg) in script
    assert 'BUNDLE_URL="' not in script and 'BUNDLE_SHA256="' not in script
    resized = ClusterConfig.model_validate(_edited(_count(1)))
    assert render_user_data(resolve(resized), "head", None) == script
    with pytest.raises(ValueError, match="reads its bundle from SSM"):
        render_user_data(resolve(cfg), "head", BundleRef(url="s3://b/k", sha256="0" * 64))


def test_diff_of_a_count_change_reports_no_head_replacement(variants):
    report = diff_templates(variants["default"], variants["count-1"], region="us-east-2")
    assert report.exit_code == 0
    assert [c for c in report.changes if c.head_node] == []
    assert {c.kind for c in report.changes} == {ChangeKind.MODIFIED}


@pytest.mark.parametrize("variant", ["pinned-new-type", "pinned-new-ami"])
def test_diff_of_a_head_change_reports_the_head_replacement(variants, variant):
    report = diff_templates(variants["pinned"], variants[variant], region="us-east-2")
    assert report.exit_code == 1
    [head] = report.blocking
    assert head.head_node and head.kind == ChangeKind.REPLACED
    assert head.logical_id.startswith(f"{names.HEAD_NODE_ID}Instance")
    assert any("LatestVersionNumber" in reason for reason in head.replaced_by)
    allowed = diff_templates(variants["pinned"], variants[variant], {head.logical_id}, region="us-east-2")
    assert allowed.exit_code == 0 and allowed.unused_allowances == ()


def _diff(tmp_path: Path, baseline: dict[str, dict], data: dict):
    """`gpucluster diff` of the config `data` against the synthesized `baseline`."""
    config = tmp_path / "cluster.yaml"
    config.write_text(yaml.safe_dump(data))
    directory = write_cdk_out(tmp_path / "baseline", baseline)
    return CliRunner().invoke(app, ["diff", str(config), "--baseline", str(directory)])


def test_diff_verb_names_the_head_and_exits_1(variants, tmp_path):
    result = _diff(tmp_path, variants["pinned"], _edited(VARIANTS["pinned-new-type"]))
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert "head node will be replaced: running jobs pause, controller restarts" in out
    assert "HeadNodeInstance" in out
    assert "DATA AT RISK" not in out
    assert _diff(tmp_path, variants["pinned"], _edited(VARIANTS["pinned"])).exit_code == 0


def test_diff_verb_of_the_default_example_resized_to_one_node_exits_0(variants, tmp_path):
    """The issue's measurement, through `gpucluster diff`: count 2 -> 1 replaces nothing."""
    result = _diff(tmp_path, variants["default"], _edited(_count(1)))
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    assert "head node will be replaced" not in out
    assert "0 replaced" in out


def test_head_user_data_passes_shellcheck(tmp_path):
    import shutil
    import subprocess
    import sys

    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).parent / "shellcheck")
    if not Path(shellcheck).exists():
        pytest.skip("shellcheck is not installed")
    script = tmp_path / "head.sh"
    script.write_text(
        render_user_data(resolve(ClusterConfig.model_validate(_edited(lambda d: None))), "head", None)
    )
    result = subprocess.run([shellcheck, "--severity=style", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout

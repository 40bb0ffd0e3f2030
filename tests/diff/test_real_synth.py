"""The diff guard on the default example synthesized for real, once per edit."""

from __future__ import annotations

import copy
import re

import pytest

from gpucluster.diff import ChangeKind, diff_templates
from tests.diff_stacks import EXAMPLE, REGION


@pytest.fixture(scope="session")
def default_variants(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """examples/default.yaml with one kind of edit each, synthesized once per session."""
    import yaml

    from gpucluster.config import ClusterConfig
    from gpucluster.synth.app import synthesize

    base = yaml.safe_load(EXAMPLE.read_text())

    def variant(edit) -> dict:
        data = copy.deepcopy(base)
        edit(data)
        return data

    def fsx(**settings):
        return lambda d: d["storage"]["fsx_lustre"].update(settings)

    def in_place(d):
        d["storage"]["fsx_lustre"]["throughput_per_tib"] = 500
        d["login_nodes"]["instance_type"] = "m7i.2xlarge"
        d["compute_groups"][0]["count"] = 4

    edits = {
        "deployment-type": variant(fsx(deployment_type="PERSISTENT_1", throughput_per_tib=200)),
        "moved-az": variant(lambda d: d.update(availability_zone="us-east-2b")),
        "in-place": variant(in_place),
    }
    root = tmp_path_factory.mktemp("diff-variants")
    return {
        name: synthesize(ClusterConfig.model_validate(data), root / name).templates
        for name, data in edits.items()
    }


def storage_stack(templates: dict) -> str:
    return next(name for name in templates if name.endswith("-storage"))


def test_real_synth_of_the_same_config_has_no_changes(synthesized):
    templates = synthesized["default"].templates
    assert diff_templates(templates, copy.deepcopy(templates), region=REGION).changes == ()


def test_real_deployment_type_change_fails_on_the_file_system(synthesized, default_variants):
    baseline = synthesized["default"].templates
    report = diff_templates(baseline, default_variants["deployment-type"], region=REGION)
    assert [c.logical_id for c in report.blocking] == ["LustreFileSystem"]
    assert report.exit_code == 1


def test_real_moved_subnet_fails_on_the_file_system(synthesized, default_variants):
    baseline = synthesized["default"].templates
    report = diff_templates(baseline, default_variants["moved-az"], region=REGION)
    fsx = report.change(storage_stack(baseline), "LustreFileSystem")
    assert fsx.kind == ChangeKind.REPLACED
    assert any(c.startswith("SubnetIds refers to export") for c in fsx.replaced_by)
    assert "LustreFileSystem" in [c.logical_id for c in report.blocking]
    assert report.exit_code == 1


def test_real_throughput_login_type_and_count_changes_are_safe(synthesized, default_variants):
    baseline = synthesized["default"].templates
    report = diff_templates(baseline, default_variants["in-place"], region=REGION)
    fsx = report.change(storage_stack(baseline), "LustreFileSystem")
    assert fsx.kind == ChangeKind.MODIFIED
    assert fsx.changed == ("LustreConfiguration/PerUnitStorageThroughput",)
    # CDK logical IDs end in an 8-hex-digit hash of the construct path.
    by_prefix = {re.sub("[0-9A-F]{8}$", "", c.logical_id): c for c in report.changes}
    login = by_prefix["LoginNodesLaunchTemplate"]
    assert login.kind == ChangeKind.MODIFIED
    assert "LaunchTemplateData/InstanceType" in login.changed
    group = by_prefix["ComputegpuGroup"]
    assert group.kind == ChangeKind.MODIFIED and "MaxSize" in group.changed
    assert {c.kind for c in report.changes} == {ChangeKind.MODIFIED}
    assert report.blocking == ()
    assert report.exit_code == 0


def test_turning_accounting_on_keeps_the_head_node(synthesized, tmp_path):
    """The head carries its own security group on every cluster, so accounting adds only the
    database's group and its rule naming the head's group: the head's SecurityGroupIds, which
    the resource schema says may replace it, stay as they are."""
    import yaml

    from gpucluster.config import ClusterConfig
    from gpucluster.synth.app import synthesize

    data = yaml.safe_load(EXAMPLE.read_text())
    data["accounting"] = {"database": {}}
    after = synthesize(ClusterConfig.model_validate(data), tmp_path / "accounting").templates
    report = diff_templates(synthesized["default"].templates, after, region=REGION)
    heads = [c for c in report.changes if c.resource_type == "AWS::EC2::Instance" and "Head" in c.logical_id]
    assert all("SecurityGroupIds" not in change.changed for change in heads), heads
    assert not report.blocking, [
        (c.logical_id, c.kind, c.may_replace, c.replaced_by) for c in report.blocking
    ]
    assert report.exit_code == 0
    database_rule = next(
        c
        for c in report.changes
        if c.resource_type == "AWS::EC2::SecurityGroupIngress" and "Database" in c.logical_id
    )
    assert database_rule.kind == ChangeKind.ADDED

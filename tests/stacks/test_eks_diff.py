"""The offline diff calls out a replaced EKS cluster or node group the way it calls out the
head node: CI stops unless --allow-replace names it."""

from __future__ import annotations

import copy

from gpucluster.diff import diff_templates
from gpucluster.diff.verdict import findings, verdict
from tests.conftest import resources_of

REGION = "us-east-2"


def _eks_templates(eks_synthesized):
    return copy.deepcopy(eks_synthesized["p5-eks-slinky"].templates)


def _logical(templates, stack, kind, prefix=""):
    [found] = [k for k in resources_of(templates[stack], kind) if k.startswith(prefix)]
    return found


def test_a_node_group_with_another_capacity_type_is_replaced_and_blocks(eks_synthesized):
    before = eks_synthesized["p5-eks-slinky"].templates
    after = _eks_templates(eks_synthesized)
    logical = _logical(after, "p5eks-eks", "AWS::EKS::Nodegroup", "Compute")
    after["p5eks-eks"]["Resources"][logical]["Properties"]["CapacityType"] = "ON_DEMAND"
    report = diff_templates(before, after, region=REGION)
    [change] = report.blocking
    assert change.logical_id == logical and change.replaces_eks
    assert report.exit_code == 1
    [line] = findings(report)
    assert "node group will be replaced" in line and f"--allow-replace {logical}" in line
    allowed = diff_templates(before, after, allow_replace={logical}, region=REGION)
    assert allowed.exit_code == 0
    assert "node group will be replaced" in verdict(allowed)[0]


def test_a_renamed_cluster_is_replaced_and_blocks(eks_synthesized):
    before = eks_synthesized["p5-eks-slinky"].templates
    after = _eks_templates(eks_synthesized)
    logical = _logical(after, "p5eks-eks", "AWS::EKS::Cluster")
    after["p5eks-eks"]["Resources"][logical]["Properties"]["Name"] = "other"
    report = diff_templates(before, after, region=REGION)
    blocking = {c.logical_id: c for c in report.blocking}
    assert blocking[logical].replaces_eks
    assert "EKS cluster will be replaced" in " ".join(findings(report))


def test_a_new_add_on_version_is_no_replacement(eks_synthesized):
    before = eks_synthesized["p5-eks-slinky"].templates
    after = _eks_templates(eks_synthesized)
    logical = _logical(after, "p5eks-eks", "AWS::EKS::Addon", "AddOncoredns")
    after["p5eks-eks"]["Resources"][logical]["Properties"]["AddonVersion"] = "v1.12.4-eksbuild.1"
    report = diff_templates(before, after, region=REGION)
    assert report.exit_code == 0 and not report.blocking


def _block_group(templates):
    return _logical(templates, "p5eks-eks", "AWS::EKS::Nodegroup", "Compute")


def test_a_capacity_block_groups_new_count_blocks_until_acknowledged(eks_synthesized):
    before = eks_synthesized["p5-eks-slinky"].templates
    after = _eks_templates(eks_synthesized)
    logical = _block_group(after)
    after["p5eks-eks"]["Resources"][logical]["Properties"]["ScalingConfig"]["MaxSize"] = 4
    report = diff_templates(before, after, region=REGION)
    [change] = report.blocking
    assert change.logical_id == logical and change.updates_block_group and not change.replaces_eks
    assert report.exit_code == 1
    [line] = findings(report)
    assert "may reset the group to 0 nodes" in line and "between blocks" in line
    assert f"--allow-replace {logical}" in line
    allowed = diff_templates(before, after, allow_replace={logical}, region=REGION)
    assert allowed.exit_code == 0 and not allowed.unused_allowances
    assert "Capacity Block node group" in verdict(allowed)[0]


def test_a_capacity_block_groups_launch_template_update_blocks(eks_synthesized):
    before = eks_synthesized["p5-eks-slinky"].templates
    after = _eks_templates(eks_synthesized)
    group = _block_group(after)
    template = after["p5eks-eks"]["Resources"][group]["Properties"]["LaunchTemplate"]["Id"]["Ref"]
    data = after["p5eks-eks"]["Resources"][template]["Properties"]["LaunchTemplateData"]
    data["UserData"] = {"Fn::Base64": "changed"}
    report = diff_templates(before, after, region=REGION)
    assert [c.logical_id for c in report.blocking] == [group]
    assert any(path.startswith("LaunchTemplate") for path in report.blocking[0].changed)
    assert report.exit_code == 1


def test_an_on_demand_groups_new_count_does_not_block(eks_synthesized):
    before = eks_synthesized["p5-eks-slinky"].templates
    after = _eks_templates(eks_synthesized)
    logical = _logical(after, "p5eks-eks", "AWS::EKS::Nodegroup", "System")
    after["p5eks-eks"]["Resources"][logical]["Properties"]["ScalingConfig"]["MaxSize"] = 4
    report = diff_templates(before, after, region=REGION)
    assert report.exit_code == 0 and not report.blocking

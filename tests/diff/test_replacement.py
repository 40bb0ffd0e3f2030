"""What a diff calls a replacement and what an update in place, on hand-built templates:
create-only properties from the resource schemas, and replacements followed through
references, also across stacks through exports."""

from __future__ import annotations

import copy

from gpucluster.diff import ChangeKind, diff_templates
from gpucluster.diff.resource_schemas import update_rules
from tests.diff_stacks import (
    ASG,
    CLUSTER,
    EFS,
    FSX,
    LAUNCH_TEMPLATE,
    LOGIN,
    REGION,
    SECRET,
    STORAGE,
    edited,
    fsx_props,
    lustre,
    network_template,
    stacks,
)


def test_fsx_deployment_type_change_replaces_and_fails():
    current = edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200))
    report = diff_templates(stacks(), current, region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.REPLACED
    assert any(c.startswith("LustreConfiguration/DeploymentType") for c in change.replaced_by)
    assert change.blocks
    assert report.exit_code == 1


def test_fsx_throughput_change_is_in_place():
    # The schema cfn-lint ships does not mark PerUnitStorageThroughput create-only, and the
    # CloudFormation Template Reference says "Update requires: No interruption": FSx changes
    # the throughput tier of a persistent SSD file system in place.
    assert (
        "/properties/LustreConfiguration/PerUnitStorageThroughput"
        not in update_rules("AWS::FSx::FileSystem", REGION).create_only
    )
    current = edited(lambda t: lustre(t).update(PerUnitStorageThroughput=500))
    report = diff_templates(stacks(), current, region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.MODIFIED
    assert change.changed == ("LustreConfiguration/PerUnitStorageThroughput",)
    assert report.exit_code == 0


def test_fsx_subnet_change_replaces_and_fails():
    current = edited(lambda t: fsx_props(t).update(SubnetIds=["subnet-0fedcba9876543210"]))
    report = diff_templates(stacks(), current, region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.REPLACED
    assert "SubnetIds" in change.replaced_by
    assert report.exit_code == 1
    assert [c.logical_id for c in report.blocking] == [FSX]


def test_replaced_subnet_replaces_the_file_system_that_refers_to_it():
    def move(t):
        t[STORAGE]["Resources"]["FsxSubnet1A2B3C4D"]["Properties"]["CidrBlock"] = "10.80.48.0/20"

    report = diff_templates(stacks(), edited(move), region=REGION)
    assert report.change(STORAGE, "FsxSubnet1A2B3C4D").kind == ChangeKind.REPLACED
    fsx = report.change(STORAGE, FSX)
    assert fsx.kind == ChangeKind.REPLACED
    assert fsx.replaced_by == ("SubnetIds refers to FsxSubnet1A2B3C4D, which is replaced",)
    assert report.exit_code == 1


def test_subnet_replaced_in_another_stack_replaces_the_file_system():
    def imported(t):
        fsx_props(t)["SubnetIds"] = [{"Fn::ImportValue": "demo-network:ExportsOutputRefClusterSubnet"}]

    baseline = edited(imported)
    baseline["demo-network"] = network_template("us-east-2a")
    current = copy.deepcopy(baseline)
    current["demo-network"] = network_template("us-east-2b")
    report = diff_templates(baseline, current, region=REGION)
    assert report.change("demo-network", "ClusterSubnet").kind == ChangeKind.REPLACED
    assert report.change(STORAGE, FSX).replaced_by == (
        "SubnetIds refers to export demo-network:ExportsOutputRefClusterSubnet, which is replaced",
    )
    assert [c.logical_id for c in report.blocking] == [FSX]


def test_fsx_compression_change_is_in_place():
    current = edited(lambda t: lustre(t).update(DataCompressionType="NONE"))
    report = diff_templates(stacks(), current, region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.MODIFIED
    assert change.replaced_by == () and change.may_replace == ()
    assert report.exit_code == 0


def test_login_instance_type_change_is_an_update_not_a_replacement():
    def resize(t):
        t[CLUSTER]["Resources"][LOGIN]["Properties"]["InstanceType"] = "m7i.2xlarge"

    report = diff_templates(stacks(), edited(resize), region=REGION)
    change = report.change(CLUSTER, LOGIN)
    assert change.kind == ChangeKind.MODIFIED
    # EBS-backed instances stop and start; instance-store ones would be replaced, which
    # the schema records as conditional. A login node holds no data, so it does not block.
    assert change.may_replace == ("InstanceType",)
    assert not change.stateful
    assert report.exit_code == 0


def test_group_count_change_is_in_place():
    def grow(t):
        t[CLUSTER]["Resources"][ASG]["Properties"].update(MaxSize="4", DesiredCapacity="4")

    report = diff_templates(stacks(), edited(grow), region=REGION)
    change = report.change(CLUSTER, ASG)
    assert change.kind == ChangeKind.MODIFIED
    assert change.changed == ("DesiredCapacity", "MaxSize")
    assert report.exit_code == 0


def test_compute_instance_type_change_updates_the_launch_template():
    def resize(t):
        data = t[CLUSTER]["Resources"][LAUNCH_TEMPLATE]["Properties"]["LaunchTemplateData"]
        data["InstanceType"] = "p5en.48xlarge"

    report = diff_templates(stacks(), edited(resize), region=REGION)
    assert report.change(CLUSTER, LAUNCH_TEMPLATE).kind == ChangeKind.MODIFIED
    assert report.exit_code == 0


def test_efs_performance_mode_change_replaces():
    def mode(t):
        t[STORAGE]["Resources"][EFS]["Properties"]["PerformanceMode"] = "maxIO"

    report = diff_templates(stacks(), edited(mode), region=REGION)
    assert report.change(STORAGE, EFS).replaced_by == ("PerformanceMode",)
    assert report.exit_code == 1


def test_changed_type_is_a_replacement():
    def retype(t):
        t[STORAGE]["Resources"][SECRET]["Type"] = "AWS::SSM::Parameter"

    report = diff_templates(stacks(), edited(retype), region=REGION)
    change = report.change(STORAGE, SECRET)
    assert change.kind == ChangeKind.REPLACED
    assert change.replaced_by == ("Type AWS::SecretsManager::Secret -> AWS::SSM::Parameter",)
    assert report.exit_code == 1


def test_replaced_security_group_takes_the_file_system_with_it():
    # GroupDescription is create-only: rewording it replaces the group, and the file
    # system's SecurityGroupIds (create-only too) then point at a new group id.
    def reword(t):
        group = t[STORAGE]["Resources"]["FsxSecurityGroupAABBCCDD"]
        group["Properties"]["GroupDescription"] = "FSx for Lustre clients"

    report = diff_templates(stacks(), edited(reword), region=REGION)
    group = report.change(STORAGE, "FsxSecurityGroupAABBCCDD")
    assert group.kind == ChangeKind.REPLACED and not group.stateful
    assert report.change(STORAGE, FSX).replaced_by == (
        "SecurityGroupIds refers to FsxSecurityGroupAABBCCDD, which is replaced",
    )
    assert [c.logical_id for c in report.blocking] == [FSX]

"""The offline diff guard on hand-built templates shaped like the gpucluster stacks."""

from __future__ import annotations

import copy
import json
import re
import sys
import types
from pathlib import Path

import pytest
from rich.console import Console

from gpucluster.diff import (
    BaselineError,
    ChangeKind,
    diff_templates,
    load_templates,
    normalize_template,
    print_report,
    run_diff,
)
from gpucluster.resource_schemas import (
    DOCUMENTED_REPLACEMENTS,
    resource_schema,
    stateful_types,
    update_rules,
)

REGION = "us-east-2"
STORAGE = "demo-storage"
CLUSTER = "demo-cluster"
FSX = "FsxLustreFileSystem3A1B2C3D"
EFS = "SharedHomeFileSystemD4E5F6A7"
SECRET = "MungeKeySecret0A1B2C3D"
LOGIN = "LoginNode0Instance11223344"
ASG = "ComputeGpuAsg55667788"
LAUNCH_TEMPLATE = "ComputeGpuLaunchTemplate99AABBCC"
ASSET = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
OTHER_ASSET = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"


def _cdk_bookkeeping(template: dict, path: str) -> dict:
    """What CDK adds to every stack: analytics resource, bootstrap check, construct paths."""
    template["Resources"]["CDKMetadata"] = {
        "Type": "AWS::CDK::Metadata",
        "Properties": {"Analytics": "v2:deflate64:H4sIAAAAAAAA/zPSMzQ0MFBMLC/WTU7J1s3JTNKr"},
        "Metadata": {"aws:cdk:path": f"{path}/CDKMetadata/Default"},
        "Condition": "CDKMetadataAvailable",
    }
    template["Conditions"] = {"CDKMetadataAvailable": {"Fn::Equals": [{"Ref": "AWS::Region"}, "us-east-2"]}}
    template["Parameters"] = {
        "BootstrapVersion": {
            "Type": "AWS::SSM::Parameter::Value<String>",
            "Default": "/cdk-bootstrap/hnb659fds/version",
        }
    }
    template["Rules"] = {
        "CheckBootstrapVersion": {
            "Assertions": [
                {"Assert": {"Fn::Not": [{"Fn::Contains": [["1", "2"], {"Ref": "BootstrapVersion"}]}]}}
            ]
        }
    }
    for logical_id, resource in template["Resources"].items():
        resource.setdefault("Metadata", {"aws:cdk:path": f"{path}/{logical_id}/Resource"})
    return template


def storage_template() -> dict:
    retain = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    return _cdk_bookkeeping(
        {
            "Resources": {
                "FsxSubnet1A2B3C4D": {
                    "Type": "AWS::EC2::Subnet",
                    "Properties": {
                        "VpcId": "vpc-0a1b2c3d4e5f67890",
                        "CidrBlock": "10.80.32.0/20",
                        "AvailabilityZone": "us-east-2a",
                    },
                },
                "FsxSecurityGroupAABBCCDD": {
                    "Type": "AWS::EC2::SecurityGroup",
                    "Properties": {
                        "GroupDescription": "FSx for Lustre",
                        "VpcId": "vpc-0a1b2c3d4e5f67890",
                    },
                },
                FSX: {
                    "Type": "AWS::FSx::FileSystem",
                    "Properties": {
                        "FileSystemType": "LUSTRE",
                        "FileSystemTypeVersion": "2.15",
                        "StorageCapacity": 4800,
                        "StorageType": "SSD",
                        "SubnetIds": [{"Ref": "FsxSubnet1A2B3C4D"}],
                        "SecurityGroupIds": [{"Fn::GetAtt": ["FsxSecurityGroupAABBCCDD", "GroupId"]}],
                        "LustreConfiguration": {
                            "DeploymentType": "PERSISTENT_2",
                            "PerUnitStorageThroughput": 250,
                            "DataCompressionType": "LZ4",
                            "WeeklyMaintenanceStartTime": "7:03:00",
                        },
                        "Tags": [{"Key": "Name", "Value": "demo-fsx"}],
                    },
                    **retain,
                },
                EFS: {
                    "Type": "AWS::EFS::FileSystem",
                    "Properties": {
                        "Encrypted": True,
                        "PerformanceMode": "generalPurpose",
                        "ThroughputMode": "elastic",
                        "FileSystemTags": [{"Key": "Name", "Value": "demo-home"}],
                    },
                    **retain,
                },
                SECRET: {
                    "Type": "AWS::SecretsManager::Secret",
                    "Properties": {
                        "Name": "gpucluster/demo/munge-key",
                        "GenerateSecretString": {"PasswordLength": 1024, "ExcludePunctuation": True},
                    },
                    **retain,
                },
            }
        },
        STORAGE,
    )


def cluster_template(asset: str = ASSET) -> dict:
    bundle_url = {
        "Fn::Join": [
            "",
            [
                "s3://",
                {"Fn::Sub": "cdk-hnb659fds-assets-${AWS::AccountId}-${AWS::Region}"},
                f"/{asset}.tar.gz",
            ],
        ]
    }
    script = ["#!/bin/bash\nset -euo pipefail\nBUNDLE=", bundle_url, "\n"]
    user_data = {"Fn::Base64": {"Fn::Join": ["", script]}}
    return _cdk_bookkeeping(
        {
            "Resources": {
                LAUNCH_TEMPLATE: {
                    "Type": "AWS::EC2::LaunchTemplate",
                    "Properties": {
                        "LaunchTemplateData": {
                            "InstanceType": "p5.48xlarge",
                            "ImageId": "ami-0123456789abcdef0",
                            "UserData": user_data,
                            "InstanceMarketOptions": {"MarketType": "capacity-block"},
                            "CapacityReservationSpecification": {
                                "CapacityReservationTarget": {"CapacityReservationId": "cr-0a1b2c3d4e5f67890"}
                            },
                            "MetadataOptions": {"HttpTokens": "required"},
                        }
                    },
                },
                ASG: {
                    "Type": "AWS::AutoScaling::AutoScalingGroup",
                    "Properties": {
                        "MinSize": "0",
                        "MaxSize": "2",
                        "DesiredCapacity": "2",
                        "LaunchTemplate": {
                            "LaunchTemplateId": {"Ref": LAUNCH_TEMPLATE},
                            "Version": {"Fn::GetAtt": [LAUNCH_TEMPLATE, "LatestVersionNumber"]},
                        },
                        "VPCZoneIdentifier": ["subnet-0a1b2c3d4e5f67890"],
                    },
                },
                LOGIN: {
                    "Type": "AWS::EC2::Instance",
                    "Properties": {
                        "InstanceType": "m7i.xlarge",
                        "ImageId": "ami-0123456789abcdef0",
                        "SubnetId": "subnet-0a1b2c3d4e5f67890",
                        "UserData": user_data,
                    },
                },
            }
        },
        CLUSTER,
    )


def stacks() -> dict[str, dict]:
    return {STORAGE: storage_template(), CLUSTER: cluster_template()}


def edited(edit) -> dict[str, dict]:
    current = copy.deepcopy(stacks())
    edit(current)
    return current


def fsx_props(templates: dict) -> dict:
    return templates[STORAGE]["Resources"][FSX]["Properties"]


def lustre(templates: dict) -> dict:
    return fsx_props(templates)["LustreConfiguration"]


# --- the cases the issue names ---------------------------------------------------------


def test_identical_templates_have_no_changes():
    report = diff_templates(stacks(), stacks(), region=REGION)
    assert report.changes == ()
    assert report.exit_code == 0


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
    assert "/properties/LustreConfiguration/PerUnitStorageThroughput" not in update_rules(
        "AWS::FSx::FileSystem", REGION
    ).create_only
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


def network_template(availability_zone: str) -> dict:
    return {
        "Resources": {
            "ClusterSubnet": {
                "Type": "AWS::EC2::Subnet",
                "Properties": {
                    "VpcId": "vpc-0a1b2c3d4e5f67890",
                    "CidrBlock": "10.80.0.0/20",
                    "AvailabilityZone": availability_zone,
                },
            }
        },
        "Outputs": {
            "ExportsOutputRefClusterSubnet": {
                "Value": {"Ref": "ClusterSubnet"},
                "Export": {"Name": "demo-network:ExportsOutputRefClusterSubnet"},
            }
        },
    }


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


def test_deleting_a_file_system_that_is_not_retained_fails():
    def deletable(t):
        t[STORAGE]["Resources"][FSX]["DeletionPolicy"] = "Delete"

    baseline = edited(deletable)
    report = diff_templates(baseline, edited(lambda t: t[STORAGE]["Resources"].pop(FSX)), region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.DELETED
    assert change.blocks
    assert report.exit_code == 1


def test_a_snapshot_policy_still_deletes_the_resource():
    def snapshot(t):
        t[STORAGE]["Resources"][EFS]["DeletionPolicy"] = "Snapshot"

    report = diff_templates(
        edited(snapshot), edited(lambda t: t[STORAGE]["Resources"].pop(EFS)), region=REGION
    )
    assert report.change(STORAGE, EFS).kind == ChangeKind.DELETED
    assert report.exit_code == 1


def test_a_retained_resource_leaving_the_template_is_kept_not_at_risk():
    log_group = "NodeLogsNodes1A2B3C4D"

    def with_log_group(t):
        t[CLUSTER]["Resources"][log_group] = {
            "Type": "AWS::Logs::LogGroup",
            "Properties": {"LogGroupName": "/gpucluster/demo/nodes", "RetentionInDays": 90},
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        }

    report = diff_templates(edited(with_log_group), stacks(), region=REGION)
    change = report.change(CLUSTER, log_group)
    assert change.kind == ChangeKind.RETAINED
    # Logs are only ever written: keeping the group loses nothing the cluster reads back.
    assert not change.blocks
    assert report.exit_code == 0
    console = Console(width=250, record=True)
    print_report(report, console)
    text = console.export_text()
    assert "removed from stack, retained in the account" in text
    assert "DATA AT RISK" not in text
    assert "kept; delete by hand when unused" in text


def test_a_retained_file_system_leaving_the_template_is_detached_and_needs_allowing():
    without_fsx = edited(lambda t: t[STORAGE]["Resources"].pop(FSX))
    report = diff_templates(stacks(), without_fsx, region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.RETAINED
    assert change.blocks, "the data survives, but the cluster would no longer mount it"
    console = Console(width=250, record=True)
    print_report(report, console)
    text = console.export_text()
    assert "DATA AT RISK" not in text
    assert "kept; delete by hand when unused, detached" in text
    allowed = diff_templates(stacks(), without_fsx, {FSX}, region=REGION)
    assert allowed.exit_code == 0
    assert allowed.unused_allowances == ()


def test_the_munge_secret_renamed_per_stack_is_a_replacement_that_needs_allowing():
    def per_stack_name(t):
        t[STORAGE]["Resources"][SECRET]["Properties"]["Name"] = {
            "Fn::Join": ["", ["gpucluster/demo/munge-key-", {"Fn::Select": [4, {"Fn::Split": ["-", {
                "Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]}]}]]
        }

    current = edited(per_stack_name)
    report = diff_templates(stacks(), current, region=REGION)
    change = report.change(STORAGE, SECRET)
    assert change.kind == ChangeKind.REPLACED
    assert change.blocks, "a new munge key breaks running daemons until every node has it"
    assert diff_templates(stacks(), current, {SECRET}, region=REGION).exit_code == 0


def test_allow_replace_lets_a_named_replacement_through():
    current = edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200))
    assert diff_templates(stacks(), current, {FSX}, region=REGION).exit_code == 0
    assert diff_templates(stacks(), current, {f"{STORAGE}/{FSX}"}, region=REGION).exit_code == 0
    assert diff_templates(stacks(), current, {f"{CLUSTER}/{FSX}"}, region=REGION).exit_code == 1


def test_allowance_that_matches_nothing_is_reported():
    report = diff_templates(stacks(), stacks(), {"FsxLustreFileSytem"}, region=REGION)
    assert report.unused_allowances == ("FsxLustreFileSytem",)
    assert report.exit_code == 0


def test_asset_hash_and_cdk_bookkeeping_changes_are_not_changes():
    def churn(t):
        t[CLUSTER] = cluster_template(asset=OTHER_ASSET)
        t[CLUSTER]["Resources"]["CDKMetadata"]["Properties"]["Analytics"] = "v2:deflate64:other"
        t[CLUSTER]["Resources"][LOGIN]["Metadata"] = {"aws:cdk:path": "demo-cluster/Login/Moved"}
        t[STORAGE]["Parameters"]["BootstrapVersion"]["Default"] = "/cdk-bootstrap/other/version"

    current = edited(churn)
    assert json.dumps(current) != json.dumps(stacks())
    report = diff_templates(stacks(), current, region=REGION)
    assert report.changes == ()


def test_normalization_keeps_what_reaches_resources():
    normalized = normalize_template(cluster_template())
    assert "CDKMetadata" not in normalized["Resources"]
    assert "Parameters" not in normalized and "Rules" not in normalized
    assert "Metadata" not in normalized["Resources"][LOGIN]
    text = json.dumps(normalized)
    assert ASSET not in text and "<asset-hash>.tar.gz" in text
    # A checksum that is not an asset object name is content and must stay visible.
    template = cluster_template()
    template["Resources"][LOGIN]["Properties"]["Tags"] = [{"Key": "sha", "Value": ASSET}]
    assert ASSET in json.dumps(normalize_template(template))


def test_renamed_logical_id_detaches_the_old_and_adds_an_empty_one():
    def rename(t):
        resources = t[STORAGE]["Resources"]
        resources["HomeFileSystemRenamed"] = resources.pop(EFS)

    report = diff_templates(stacks(), edited(rename), region=REGION)
    assert report.change(STORAGE, EFS).kind == ChangeKind.RETAINED
    assert report.change(STORAGE, EFS).blocks
    assert report.change(STORAGE, "HomeFileSystemRenamed").kind == ChangeKind.ADDED
    assert report.exit_code == 1


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


def test_retain_policy_makes_any_resource_stateful():
    def move(t):
        t[CLUSTER]["Resources"][LOGIN]["Properties"]["SubnetId"] = "subnet-0fedcba9876543210"

    assert diff_templates(stacks(), edited(move), region=REGION).exit_code == 0

    def retained(t):
        t[CLUSTER]["Resources"][LOGIN]["DeletionPolicy"] = "Retain"

    baseline = edited(retained)
    current = copy.deepcopy(baseline)
    move(current)
    report = diff_templates(baseline, current, region=REGION)
    assert report.change(CLUSTER, LOGIN).kind == ChangeKind.REPLACED
    assert report.change(CLUSTER, LOGIN).blocks
    assert report.exit_code == 1


def test_removed_stack_deletes_its_resources():
    current = stacks()
    del current[STORAGE]
    report = diff_templates(stacks(), current, region=REGION)
    # Everything in the storage stack is retained: deleting the stack loses no data, but
    # detaches it from the cluster, so it still needs an allowance.
    for logical_id in (FSX, EFS, SECRET):
        assert report.change(STORAGE, logical_id).kind == ChangeKind.RETAINED
        assert report.change(STORAGE, logical_id).blocks
    assert report.exit_code == 1

    def deletable(t):
        t[STORAGE]["Resources"][SECRET]["DeletionPolicy"] = "Delete"

    report = diff_templates(edited(deletable), current, region=REGION)
    assert report.change(STORAGE, SECRET).kind == ChangeKind.DELETED
    assert report.change(STORAGE, SECRET).blocks
    assert report.exit_code == 1


def test_new_stack_only_adds():
    baseline = stacks()
    del baseline[CLUSTER]
    report = diff_templates(baseline, stacks(), region=REGION)
    assert {c.kind for c in report.changes} == {ChangeKind.ADDED}
    assert report.exit_code == 0


def test_stateful_types_come_from_cfn_lint_and_cover_the_cluster_data():
    wanted = {
        "AWS::FSx::FileSystem", "AWS::EFS::FileSystem", "AWS::SecretsManager::Secret",
        "AWS::EC2::Volume", "AWS::S3::Bucket", "AWS::DynamoDB::Table", "AWS::RDS::DBInstance",
        "AWS::RDS::DBCluster", "AWS::Logs::LogGroup",
    }
    assert wanted <= stateful_types()


@pytest.mark.parametrize(
    ("resource_type", "pointer"),
    [(t, p) for t, pointers in DOCUMENTED_REPLACEMENTS.items() for p in pointers],
)
def test_documented_replacements_name_real_properties_the_schema_still_lacks(resource_type, pointer):
    schema = resource_schema(resource_type, REGION)
    node = schema
    for segment in pointer.split("/")[2:]:
        if "$ref" in node:
            node = schema["definitions"][node["$ref"].rsplit("/", 1)[-1]]
        assert segment in node.get("properties", {}), f"{pointer}: no such property in the schema"
        node = node["properties"][segment]
    assert pointer not in schema.get("createOnlyProperties", []), (
        f"cfn-lint's schema now declares {pointer}; drop it from DOCUMENTED_REPLACEMENTS"
    )


# --- loading baselines and printing ----------------------------------------------------


def write_cdk_out(directory: Path, templates: dict[str, dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, template in templates.items():
        (directory / f"{name}.template.json").write_text(json.dumps(template, indent=1))
        (directory / f"{name}.assets.json").write_text(json.dumps({"version": "48.0.0", "files": {}}))
    (directory / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": {}}))
    (directory / "tree.json").write_text("{}")
    (directory / "cdk.out").write_text('{"version":"48.0.0"}')
    (directory / f"asset.{ASSET}").mkdir()
    return directory


def test_load_templates_reads_only_stack_templates(tmp_path):
    loaded = load_templates(write_cdk_out(tmp_path / "cdk.out", stacks()))
    assert loaded == stacks()


def test_load_templates_explains_a_wrong_directory(tmp_path):
    with pytest.raises(BaselineError, match="holds no \\*.template.json"):
        load_templates(tmp_path)
    with pytest.raises(BaselineError, match="not a directory"):
        load_templates(tmp_path / "missing")
    (tmp_path / "broken.template.json").write_text("{")
    with pytest.raises(BaselineError, match="not valid JSON"):
        load_templates(tmp_path)


def test_report_names_the_resource_and_the_property():
    current = edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200))
    console = Console(record=True, width=200, color_system=None)
    print_report(diff_templates(stacks(), current, region=REGION), console)
    text = console.export_text()
    assert FSX in text
    assert "LustreConfiguration/DeploymentType" in text
    assert "DATA AT RISK" in text
    assert f"--allow-replace {FSX}" in text


@pytest.fixture
def fake_synth(monkeypatch):
    """Stands in for gpucluster.synth until the real one is tested below."""
    produced: dict[str, dict] = {}

    def synthesize(cfg, outdir):
        write_cdk_out(Path(outdir), produced)
        return types.SimpleNamespace(templates=copy.deepcopy(produced), outdir=Path(outdir))

    monkeypatch.setitem(sys.modules, "gpucluster.synth", types.SimpleNamespace(synthesize=synthesize))
    return produced


EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "default.yaml"


def test_run_diff_exit_codes(tmp_path, fake_synth, capsys):
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.update(edited(lambda t: t[STORAGE]["Resources"].pop(FSX)))
    assert run_diff(EXAMPLE, baseline, []) == 1
    assert FSX in capsys.readouterr().out
    assert run_diff(EXAMPLE, baseline, [FSX]) == 0
    assert run_diff(EXAMPLE, tmp_path / "nowhere", []) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: Demo\n")
    assert run_diff(bad, baseline, []) == 2
    assert "name" in capsys.readouterr().out


# --- through the real synth ------------------------------------------------------------


@pytest.fixture(scope="session")
def default_variants(tmp_path_factory) -> dict[str, dict[str, dict]]:
    """examples/default.yaml with one kind of edit each, synthesized once per session."""
    import yaml

    from gpucluster.config import ClusterConfig
    from gpucluster.synth import synthesize

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

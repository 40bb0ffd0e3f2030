"""Hand-built templates shaped like the gpucluster stacks, shared by the diff tests."""

from __future__ import annotations

import copy
import json
from pathlib import Path

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

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "default.yaml"


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


def write_cdk_out(directory: Path, templates: dict[str, dict]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, template in templates.items():
        (directory / f"{name}.template.json").write_text(json.dumps(template, indent=1))
        (directory / f"{name}.assets.json").write_text(json.dumps({"version": "48.0.0", "files": {}}))
    (directory / "manifest.json").write_text(json.dumps({"version": "48.0.0", "artifacts": {}}))
    (directory / "tree.json").write_text("{}")
    (directory / "cdk.out").write_text('{"version":"48.0.0"}')
    (directory / f"asset.{ASSET}").mkdir(exist_ok=True)
    return directory

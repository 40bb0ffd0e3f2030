"""EFS for /home and the Slurm controller's StateSaveLocation.

Keeping controller state off the head node's disk lets a replaced head node
resume every queued and running job.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource


@dataclass(frozen=True)
class SharedHomeProps:
    subnet_id: str
    security_group_id: str


class SharedHome(Construct):
    file_system: Resource

    def __init__(self, scope: Construct, id: str, props: SharedHomeProps) -> None:
        super().__init__(scope, id)
        self.file_system = resource(
            self,
            "FileSystem",
            "AWS::EFS::FileSystem",
            {
                "BackupPolicy": {"Status": "ENABLED"},
                "Encrypted": True,
                "FileSystemProtection": {"ReplicationOverwriteProtection": "ENABLED"},
                "PerformanceMode": "generalPurpose",
                "ThroughputMode": "elastic",
            },
        )
        self.file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        resource(
            self,
            "MountTarget",
            "AWS::EFS::MountTarget",
            {
                "FileSystemId": self.file_system.ref_token,
                "SecurityGroups": [props.security_group_id],
                "SubnetId": props.subnet_id,
            },
        )

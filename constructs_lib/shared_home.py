"""EFS for /home and the Slurm controller's StateSaveLocation.

Keeping controller state off the head node's disk lets a replaced head node
resume every queued and running job.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_efs as efs
from constructs import Construct


@dataclass(frozen=True)
class SharedHomeProps:
    subnet_id: str
    security_group_id: str


class SharedHome(Construct):
    file_system: efs.CfnFileSystem

    def __init__(self, scope: Construct, id: str, props: SharedHomeProps) -> None:
        super().__init__(scope, id)
        self.file_system = efs.CfnFileSystem(
            self,
            "FileSystem",
            encrypted=True,
            performance_mode="generalPurpose",
            throughput_mode="elastic",
            backup_policy=efs.CfnFileSystem.BackupPolicyProperty(status="ENABLED"),
            file_system_protection=efs.CfnFileSystem.FileSystemProtectionProperty(
                replication_overwrite_protection="ENABLED"
            ),
        )
        self.file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        efs.CfnMountTarget(
            self,
            "MountTarget",
            file_system_id=self.file_system.ref,
            subnet_id=props.subnet_id,
            security_groups=[props.security_group_id],
        )

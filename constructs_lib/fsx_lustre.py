"""FSx for Lustre scratch/persistent file system for datasets and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_fsx as fsx
from constructs import Construct

from gpucluster.config import FsxLustreConfig

LUSTRE_VERSION = "2.15"


@dataclass(frozen=True)
class FsxLustreProps:
    settings: FsxLustreConfig
    subnet_id: str
    security_group_id: str


class FsxLustre(Construct):
    file_system: fsx.CfnFileSystem

    def __init__(self, scope: Construct, id: str, props: FsxLustreProps) -> None:
        super().__init__(scope, id)
        settings = props.settings
        persistent = settings.deployment_type.startswith("PERSISTENT")
        metadata = None
        if settings.deployment_type == "PERSISTENT_2":
            metadata = fsx.CfnFileSystem.MetadataConfigurationProperty(
                mode="USER_PROVISIONED" if settings.metadata_iops else "AUTOMATIC",
                iops=settings.metadata_iops,
            )
        self.file_system = fsx.CfnFileSystem(
            self,
            "FileSystem",
            file_system_type="LUSTRE",
            file_system_type_version=LUSTRE_VERSION,
            storage_capacity=settings.storage_gib,
            storage_type="SSD",
            subnet_ids=[props.subnet_id],
            security_group_ids=[props.security_group_id],
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(
                deployment_type=settings.deployment_type,
                per_unit_storage_throughput=settings.throughput_per_tib if persistent else None,
                data_compression_type=settings.compression,
                efa_enabled=True if settings.efa else None,
                metadata_configuration=metadata,
                weekly_maintenance_start_time="7:03:00",
            ),
        )
        self.file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)

"""FSx for Lustre scratch/persistent file system for datasets and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.config import FsxLustreConfig
from gpucluster.infra.constructs.cfn import Resource, resource

LUSTRE_VERSION = "2.15"


@dataclass(frozen=True)
class FsxLustreProps:
    settings: FsxLustreConfig
    subnet_id: str
    security_group_id: str


class FsxLustre(Construct):
    file_system: Resource

    def __init__(self, scope: Construct, id: str, props: FsxLustreProps) -> None:
        super().__init__(scope, id)
        settings = props.settings
        lustre: dict[str, Any] = {
            "DataCompressionType": settings.compression,
            "DeploymentType": settings.deployment_type,
            "WeeklyMaintenanceStartTime": "7:03:00",
        }
        if settings.deployment_type.startswith("PERSISTENT") and settings.throughput_per_tib is not None:
            lustre["PerUnitStorageThroughput"] = settings.throughput_per_tib
        if settings.efa:
            lustre["EfaEnabled"] = True
        if settings.deployment_type == "PERSISTENT_2":
            mode = "USER_PROVISIONED" if settings.metadata_iops else "AUTOMATIC"
            metadata: dict[str, object] = {"Mode": mode}
            if settings.metadata_iops is not None:
                metadata["Iops"] = settings.metadata_iops
            lustre["MetadataConfiguration"] = metadata
        self.file_system = resource(
            self,
            "FileSystem",
            "AWS::FSx::FileSystem",
            {
                "FileSystemType": "LUSTRE",
                "FileSystemTypeVersion": LUSTRE_VERSION,
                "LustreConfiguration": lustre,
                "SecurityGroupIds": [props.security_group_id],
                "StorageCapacity": settings.storage_gib,
                "StorageType": "SSD",
                "SubnetIds": [props.subnet_id],
            },
        )
        self.file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)

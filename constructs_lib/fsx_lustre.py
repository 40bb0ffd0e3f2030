"""FSx for Lustre scratch/persistent file system for datasets and checkpoints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.cfn import Resource, resource

LUSTRE_VERSION = "2.15"


@dataclass(frozen=True)
class FsxLustreProps:
    # storage.fsx_lustre's settings, as validated (gpucluster.config.fsx_rules).
    storage_gib: int
    deployment_type: str
    throughput_per_tib: int | None
    compression: Literal["LZ4", "NONE"]
    efa: bool
    metadata_iops: int | None
    subnet_id: str
    security_group_id: str


class FsxLustre(Construct):
    file_system: Resource

    def __init__(self, scope: Construct, id: str, props: FsxLustreProps) -> None:
        super().__init__(scope, id)
        lustre: dict[str, Any] = {
            "DataCompressionType": props.compression,
            "DeploymentType": props.deployment_type,
            "WeeklyMaintenanceStartTime": "7:03:00",
        }
        if props.deployment_type.startswith("PERSISTENT") and props.throughput_per_tib is not None:
            lustre["PerUnitStorageThroughput"] = props.throughput_per_tib
        if props.efa:
            lustre["EfaEnabled"] = True
        if props.deployment_type == "PERSISTENT_2":
            mode = "USER_PROVISIONED" if props.metadata_iops else "AUTOMATIC"
            metadata: dict[str, object] = {"Mode": mode}
            if props.metadata_iops is not None:
                metadata["Iops"] = props.metadata_iops
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
                "StorageCapacity": props.storage_gib,
                "StorageType": "SSD",
                "SubnetIds": [props.subnet_id],
            },
        )
        self.file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)

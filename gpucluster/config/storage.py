"""`storage:`: the FSx for Lustre file system, checked against `fsx_rules` before deploy."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpucluster.config import fsx_rules
from gpucluster.config.fields import StrictModel, fail_at
from gpucluster.config.mount_points import mount_point_problem


class FsxLustreConfig(StrictModel):
    # The rule descriptions come from fsx_rules' table, so the schema cannot contradict it.
    storage_gib: int = Field(default=4800, description=fsx_rules.describe_storage())
    deployment_type: fsx_rules.DeploymentType = "PERSISTENT_2"
    throughput_per_tib: int | None = Field(default=250, description=fsx_rules.describe_throughput())
    compression: Literal["LZ4", "NONE"] = "LZ4"
    efa: bool = Field(default=False, description=fsx_rules.describe_efa())
    metadata_iops: int | None = Field(default=None, description=fsx_rules.describe_metadata_iops())
    mount_point: str = "/fsx"

    @model_validator(mode="after")
    def _fsx_rules(self) -> FsxLustreConfig:
        found = fsx_rules.problem(
            self.deployment_type, self.throughput_per_tib, self.efa, self.storage_gib, self.metadata_iops
        )
        if found:
            raise fail_at(found.field, found.message)
        problem = mount_point_problem(self.mount_point)
        if problem:
            raise fail_at("mount_point", problem)
        return self


class StorageConfig(StrictModel):
    fsx_lustre: FsxLustreConfig | None = Field(default_factory=FsxLustreConfig)

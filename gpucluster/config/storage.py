"""`storage:`: the FSx for Lustre file system, checked against `fsx_rules` before deploy."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpucluster.config import fsx_rules
from gpucluster.config.fields import StrictModel, fail_at
from gpucluster.config.mount_points import mount_point_problem


class FsxLustreConfig(StrictModel):
    storage_gib: int = Field(
        default=4800, description="1200, 2400, then multiples of 2400 (SCRATCH_1: of 3600)."
    )
    deployment_type: fsx_rules.DeploymentType = "PERSISTENT_2"
    throughput_per_tib: int | None = Field(
        default=250,
        description="MB/s per TiB; PERSISTENT_1 50/100/200, PERSISTENT_2 125/250/500/1000; null for SCRATCH.",
    )
    compression: Literal["LZ4", "NONE"] = "LZ4"
    efa: bool = Field(
        default=False,
        description="EFA-enabled file system (PERSISTENT_2 only, set at creation); storage_gib in "
        "multiples of 38400/19200/9600/4800 for 125/250/500/1000 MB/s/TiB.",
    )
    metadata_iops: int | None = Field(
        default=None,
        description="PERSISTENT_2 metadata IOPS: 1500, 3000, 6000, 12000, then multiples of 12000 "
        "to 192000; null: automatic.",
    )
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

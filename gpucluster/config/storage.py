"""`storage:`: the FSx for Lustre file system, checked against `fsx_rules` before deploy."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from gpucluster.config import fsx_rules
from gpucluster.config.fields import StrictModel, fail_at
from gpucluster.config.mount_points import mount_point_problem

FSX_THROUGHPUT = {
    "PERSISTENT_1": (50, 100, 200),
    "PERSISTENT_2": (125, 250, 500, 1000),
}


class FsxLustreConfig(StrictModel):
    storage_gib: int = Field(
        default=4800, description="1200, 2400, then multiples of 2400 (SCRATCH_1: of 3600)."
    )
    deployment_type: Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"] = "PERSISTENT_2"
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
        size = self.storage_gib
        if self.deployment_type == "SCRATCH_1":
            valid = size in (1200, 2400) or (size > 2400 and size % 3600 == 0)
            hint = "1200, 2400, or a multiple of 3600"
        else:
            valid = size in (1200, 2400) or (size > 2400 and size % 2400 == 0)
            hint = "1200, 2400, or a multiple of 2400"
        if not valid:
            raise fail_at("storage_gib", f"{size} GiB is not a valid {self.deployment_type} size; use {hint}")
        allowed = FSX_THROUGHPUT.get(self.deployment_type)
        if allowed is None and self.throughput_per_tib is not None:
            raise fail_at(
                "throughput_per_tib",
                f"{self.deployment_type} has no throughput setting; set throughput_per_tib: null",
            )
        if allowed is not None and self.throughput_per_tib not in allowed:
            raise fail_at(
                "throughput_per_tib",
                f"{self.throughput_per_tib} is not offered for {self.deployment_type}; "
                f"use one of {', '.join(map(str, allowed))}",
            )
        if self.efa and self.deployment_type != "PERSISTENT_2":
            raise fail_at("efa", "EFA-enabled FSx for Lustre needs deployment_type PERSISTENT_2")
        if self.metadata_iops is not None:
            if self.deployment_type != "PERSISTENT_2":
                raise fail_at("metadata_iops", "metadata_iops applies to PERSISTENT_2 only; remove it")
            problem = fsx_rules.metadata_iops_problem(self.metadata_iops)
            if problem:
                raise fail_at("metadata_iops", problem)
        if self.efa:
            problem = fsx_rules.efa_capacity_problem(size, self.throughput_per_tib)
            if problem:
                raise fail_at("storage_gib", problem)
        problem = mount_point_problem(self.mount_point)
        if problem:
            raise fail_at("mount_point", problem)
        return self


class StorageConfig(StrictModel):
    fsx_lustre: FsxLustreConfig | None = Field(default_factory=FsxLustreConfig)

"""`image:`: the node AMI (an SSM parameter or a pinned id) and the kernel it must boot."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, field_validator

from gpucluster.config.fields import AmiId, StrictModel, fail, matching

DLAMI_UBUNTU_2404 = (
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id"
)

KernelRelease = Annotated[
    str,
    matching(
        r"^\d+\.\d+\.\d+-\d+-[a-z0-9]+$",
        "kernel",
        "'{value}' is not a kernel release; use what `uname -r` prints, e.g. 6.8.0-1021-aws",
    ),
]


class ImageConfig(StrictModel):
    ssm_parameter: str = Field(
        default=DLAMI_UBUNTU_2404,
        description="SSM parameter with the AMI id, resolved at deploy when ami_id is null.",
    )
    ami_id: AmiId | None = Field(
        default=None, description="Pinned AMI id (recommended): the image never changes under you."
    )
    kernel: KernelRelease | None = Field(
        default=None,
        description="Kernel release (`uname -r`) the AMI boots; nodes that differ refuse to join.",
    )

    @field_validator("ssm_parameter")
    @classmethod
    def _ssm_supported_os(cls, value: str) -> str:
        if not value.startswith("/"):
            raise fail("ssm_parameter", "must be an SSM parameter path starting with /")
        if "ubuntu-22.04" in value or "ubuntu-20.04" in value:
            raise fail(
                "ssm_parameter",
                "Ubuntu 22.04 and older ship Slurm 21.08, which lacks dynamic nodes; "
                f"use the Ubuntu 24.04 Deep Learning AMI: {DLAMI_UBUNTU_2404}",
            )
        return value

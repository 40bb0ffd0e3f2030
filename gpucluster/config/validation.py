"""The config's `validation` section: how the validation jobs run nccl-tests.

One module per config section. The values
are rendered into shell (gpucluster.jobs.validation), so each is checked to hold nothing a shell
would expand or split.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field, field_validator
from pydantic_core import PydanticCustomError

from gpucluster.config.fields import STRICT_CONFIG
from gpucluster.config.image_reference import ImageReference

_PATH = re.compile(r"^/[A-Za-z0-9._/-]*$")


class ValidationConfig(BaseModel):
    """How the validation jobs under /opt/gpucluster/jobs/ on login nodes run nccl-tests, and the
    thresholds `gpucluster gate --config` judges their logs by. NCCL_TESTS_DIR,
    NCCL_TESTS_CONTAINER and NCCL_TESTS_MPI_HOME override the first three at sbatch time."""

    model_config = STRICT_CONFIG

    nccl_tests_dir: str | None = Field(
        default=None,
        description=(
            "Directory of the nccl-tests binaries (all_reduce_perf ...). null: the DLAMI's prebuilt "
            "ones under its default CUDA, /usr/local/cuda-X.Y/efa/test-cuda-X.Y, or "
            "/opt/nccl-tests/build inside a container."
        ),
    )
    container_image: ImageReference | None = Field(
        default=None,
        description=(
            "Run nccl-tests in this image through Pyxis (srun --container-image); null runs them in "
            "the imported squashfs of software.training_image when that is set, else the DLAMI's "
            "binaries with its Open MPI. Like that one, never with a registry login in it."
        ),
    )
    mpi_home: str = Field(
        default="/opt/amazon/openmpi", description="Open MPI whose mpirun starts the DLAMI's binaries."
    )
    min_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description=(
            "`gpucluster gate --config`: share of the published all_reduce busbw a run must reach "
            "(null: 0.8). --min-fraction overrides it."
        ),
    )
    min_busbw_gbps: float | None = Field(
        default=None,
        gt=0,
        description=(
            "`gpucluster gate --config`: all_reduce_perf busbw floor in GB/s instead of the published "
            "figure, e.g. for node counts or types no figure is published for. --min-busbw overrides it."
        ),
    )

    @field_validator("nccl_tests_dir", "mpi_home")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not _PATH.match(value):
            raise PydanticCustomError("path", f"'{value}' must be an absolute path of letters, digits, ._-/")
        return value

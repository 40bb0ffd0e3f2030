"""Render the training image's Dockerfile from the config's `software:` pins.

The recipe follows the EFA user guide's container instructions: the EFA installer in
user-space mode brings libfabric (EFA provider) and the aws-ofi-nccl plugin NCCL needs to use
EFA; without them NCCL falls back to TCP sockets without an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpucluster.config import ClusterConfig
from gpucluster.launch.gpu_env import EFA_BIN_DIR, LIBRARY_DIRS, NCCL_NET_PLUGIN, OFI_NCCL_DIR, PLUGIN_FILE
from gpucluster.launch.node_lib import TRAINER_REQUIREMENTS
from gpucluster.rendering import render

TEMPLATE = "container/Dockerfile.j2"
NGC_PYTORCH = "nvcr.io/nvidia/pytorch"
EFA_INSTALLER_URL_BASE = "https://efa-installer.amazonaws.com"
# The user's code: the last layer, and the torchrun job's working directory in this image.
CODE_DIR = "/workspace/train"
# nccl-tests for the validation jobs, which look for them here in a container
# (validation.nccl_tests_dir's container default; gpucluster.gate.jobs). Built against the
# base image's own Open MPI (HPC-X), so srun --mpi=pmix starts them like any NGC program.
NCCL_TESTS_BUILD_DIR = "/opt/nccl-tests/build"
NCCL_TESTS_URL_BASE = "https://github.com/NVIDIA/nccl-tests/archive/refs/tags"
NGC_MPI_HOME = "/opt/hpcx/ompi"
CUDA_HOME = "/usr/local/cuda"
# Variables that force legacy behaviour and hurt current libfabric / aws-ofi-nccl: the recipe
# never sets them (tests/container/test_dockerfile.py fails if one appears).
FORBIDDEN_VARIABLES = ("FI_EFA_USE_DEVICE_RDMA", "NCCL_PROTO", "NCCL_BUFFSIZE", "RDMAV_")


@dataclass(frozen=True)
class EfaInstaller:
    version: str
    sha256: str
    url_base: str = EFA_INSTALLER_URL_BASE
    bin_dir: str = EFA_BIN_DIR
    ofi_nccl_dir: str = OFI_NCCL_DIR
    plugin_name: str = NCCL_NET_PLUGIN
    plugin_file: str = PLUGIN_FILE


@dataclass(frozen=True)
class NcclTests:
    version: str
    sha256: str
    url_base: str = NCCL_TESTS_URL_BASE
    build_dir: str = NCCL_TESTS_BUILD_DIR
    mpi_home: str = NGC_MPI_HOME
    cuda_home: str = CUDA_HOME


def base_image(cfg: ClusterConfig) -> str:
    """nvcr.io/nvidia/pytorch:TAG, and @sha256:DIGEST when the config pins one."""
    software = cfg.software
    image = f"{NGC_PYTORCH}:{software.ngc_pytorch_tag}"
    return f"{image}@sha256:{software.ngc_pytorch_digest}" if software.ngc_pytorch_digest else image


def render_dockerfile(cfg: ClusterConfig) -> str:
    software = cfg.software
    return render(
        TEMPLATE,
        cluster=cfg.name,
        base_image=base_image(cfg),
        efa=EfaInstaller(software.efa_installer_version, software.efa_installer_sha256),
        nccl_tests=NcclTests(software.nccl_tests_version, software.nccl_tests_sha256),
        library_path=":".join(LIBRARY_DIRS),
        trainer_requirements=" ".join(TRAINER_REQUIREMENTS),
        code_dir=CODE_DIR,
    )


def write_dockerfile(cfg: ClusterConfig, output: Path) -> Path:
    """DIR/Dockerfile; DIR is created when missing."""
    output.mkdir(parents=True, exist_ok=True)
    path = output / "Dockerfile"
    path.write_text(render_dockerfile(cfg))
    return path

"""What compute nodes keep under NODE_LIB_DIR for the jobs: the GPU environment file and the
reference trainer's source.

sbatch ships only the job script to the first node, so anything else a job's ranks run must be
on every compute node already. The trainer (`python -m gpucluster.train`) is pure Python on
top of torch and pydantic: its package tree goes to NODE_LIB_DIR/python, which the torchrun job
puts first on PYTHONPATH on the host and mounts read-only into a container. Its packages come
from the job's Python environment (TRAIN_REQUIREMENTS, on the host) or the training image
(whose recipe installs the same pins).
"""

from __future__ import annotations

from pathlib import Path

from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.launch.gpu_env import NODE_LIB_DIR, gpu_env_path, render_gpu_env

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# The trainer imports gpucluster.bad_input and gpucluster.train only (tests/launch/test_node_lib.py
# runs it from these files alone).
TRAINER_MODULES = ("__init__.py", "bad_input.py", "train/*.py")
# What the trainer needs besides torch, pinned: the host environment the torchrun job builds and
# the training image install exactly this.
TRAINER_REQUIREMENTS = ("pydantic==2.14.4",)
# torch's companion in the host environment: torch imports numpy when it is there and warns on
# every rank when it is not (the trainer saves numpy's RNG state with the others). NGC images
# bring their own, built with their torch, which the recipe leaves alone.
HOST_COMPANIONS = ("numpy==2.4.6",)


def trainer_dir(lib_dir: str = NODE_LIB_DIR) -> str:
    return f"{lib_dir}/python"


def trainer_sources() -> dict[str, str]:
    """The trainer's files, keyed by their path under trainer_dir()."""
    files: dict[str, str] = {}
    for pattern in TRAINER_MODULES:
        for path in sorted(PACKAGE_ROOT.glob(pattern)):
            files[f"gpucluster/{path.relative_to(PACKAGE_ROOT).as_posix()}"] = path.read_text()
    return files


def python_requirements(cfg: ClusterConfig) -> tuple[str, ...]:
    """pip requirements of the torchrun job's host environment."""
    return (f"torch=={cfg.software.torch_version}", *TRAINER_REQUIREMENTS, *HOST_COMPANIONS)


def node_lib_files(
    cfg: ClusterConfig, group: ComputeGroupConfig, lib_dir: str = NODE_LIB_DIR
) -> dict[str, str]:
    """Every file a node of `group` keeps under lib_dir, keyed by its absolute path."""
    files = {gpu_env_path(lib_dir): render_gpu_env(cfg, group)}
    python = trainer_dir(lib_dir)
    files.update({f"{python}/{path}": text for path, text in trainer_sources().items()})
    return files

"""The Debian packages each role installs, and the kernel packages no upgrade may move."""

from __future__ import annotations

from gpucluster.slurm.build import BUILD_DEPENDENCIES

# Meta-packages, not versioned kernel packages: holding versioned ones made the EFA
# installer rebuild its modules for every kernel.
KERNEL_HOLD_PACKAGES = (
    "linux-aws",
    "linux-image-aws",
    "linux-headers-aws",
    "linux-base",
    "lustre-client-modules-aws",
)
# unattended-upgrades matches these as regular expressions from the start of a name.
UNATTENDED_BLACKLIST = (
    "linux-aws",
    "linux-image-",
    "linux-headers-",
    "linux-modules-",
    "linux-base",
    "lustre-client-modules-",
)

# The pinned Slurm's build dependencies on every node (gpucluster.slurm.build): the head
# builds it, the others load the same libraries (the -dev packages pull them in), and
# libpmix-dev ships the unversioned libpmix.so that mpi/pmix dlopens (`srun --mpi=pmix`,
# the containerised nccl-tests: "can not load PMIx library" without it).
BASE_PACKAGES = ("munge", "nfs-common", *BUILD_DEPENDENCIES)
# Pyxis is built on every role that runs srun/sbatch, the head included: the plugstack.conf
# each of them reads marks spank_pyxis.so required, and a client that cannot load it refuses
# to submit. spank.h comes with the Slurm package (lib/slurm_package.sh).
BUILD_PACKAGES = ("build-essential", "curl")
HEAD_PACKAGES = (*BASE_PACKAGES, "python3-boto3", *BUILD_PACKAGES)
# Ubuntu's Slurm packages: an image with one of them would mix two Slurms under /usr.
DISTRIBUTION_SLURM_PACKAGES = ("slurm-client", "slurmd", "slurmctld", "sackd", "libslurm-dev", "slurm-wlm")
# `nc -z` tells when slurmctld listens, before slurmd or sackd is started.
NODE_TOOLS = ("netcat-openbsd",)
# The torchrun job builds its host Python environment with `python3 -m venv`, which Ubuntu
# ships separately.
COMPUTE_TOOLS = ("python3-venv",)

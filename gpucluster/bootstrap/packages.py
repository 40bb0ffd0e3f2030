"""The Debian packages each role installs, and the kernel packages no upgrade may move."""

from __future__ import annotations

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

# libpmix-dev: Debian's and Ubuntu's Slurm build mpi/pmix against <libdir>/pmix2 and dlopen
# its unversioned libpmix.so, which only the -dev package ships; without it `srun --mpi=pmix`
# (the containerised nccl-tests) fails with "can not load PMIx library" on the submitting
# side and in slurmstepd (seen with Debian 12's Slurm 22.05 in the real-Slurm suite).
BASE_PACKAGES = ("munge", "nfs-common", "libpmix-dev")
# Pyxis is built on every role that runs srun/sbatch, the head included: the plugstack.conf
# each of them reads marks spank_pyxis.so required, and a client that cannot load it refuses
# to submit. libslurm-dev (spank.h) comes with the Slurm packages in roles.sh.
BUILD_PACKAGES = ("build-essential", "curl")
HEAD_PACKAGES = (*BASE_PACKAGES, "python3-boto3", *BUILD_PACKAGES)
# `nc -z` tells when slurmctld listens, before slurmd or sackd is started.
NODE_TOOLS = ("netcat-openbsd",)
# The torchrun job builds its host Python environment with `python3 -m venv`, which Ubuntu
# ships separately.
COMPUTE_TOOLS = ("python3-venv",)

"""The one Slurm release gpucluster runs, and its source: the pin the config checks
(software.slurm), the nodes build (gpucluster.slurm.build) and the suite runs."""

from __future__ import annotations

from gpucluster.package_files import DATA

PINNED_SLURM = "25.11.7"
# Tag slurm-25-11-7-1 of SchedMD/slurm; the tarball is `git archive` of this commit.
PINNED_COMMIT = "f56e676bbd3e7cccbdd7c505c030c62bb983ebee"
PINNED_SHA256 = "6c2d6cdc6615b850996c803aa3869546c0f584e0d5e640f9bcbc5a851199c6ad"
# The one copy in the repository (its SHA256SUMS line is the pin): the suite builds it, and
# the Cluster stack ships it as an asset for the head to build.
SOURCE_TARBALL = DATA / f"slurm-{PINNED_SLURM}.tar.gz"

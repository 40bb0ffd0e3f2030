"""Where a shared file system may be mounted on every node.

A mount hides whatever the directory held. Mounting Lustre on /etc, /usr or /var
would hide the node's own configuration, programs or Slurm spool and break the
boot in ways that look nothing like a storage problem, so such paths are refused
here, before deploy.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from gpucluster.node_root import NODE_ROOT

MOUNT_POINT = re.compile(r"^/[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*$")

# The Linux filesystem hierarchy the OS owns (FHS 3.0) plus what this project and the
# AMI put on every node: /home is EFS (users' homes and the Slurm state), NODE_ROOT the
# bootstrap bundle, /opt/dlami/nvme the local NVMe, /opt/amazon EFA's libfabric.
RESERVED = tuple(
    PurePosixPath(p)
    for p in (
        "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
        "/lost+found", "/proc", "/root", "/run", "/sbin", "/snap", "/sys", "/tmp", "/usr", "/var",
        "/opt/amazon", "/opt/aws", "/opt/dlami", NODE_ROOT,
    )
)  # fmt: skip


def mount_point_problem(value: str) -> str | None:
    """None for a usable mount point, else what is wrong and what to use."""
    if not MOUNT_POINT.match(value):
        return (
            f"'{value}' is not a usable mount point; write an absolute path of letters, digits, "
            "_ and -, without a trailing slash, e.g. /fsx"
        )
    path = PurePosixPath(value)
    for reserved in RESERVED:
        if path == reserved or reserved in path.parents:
            return (
                f"{value} is inside {reserved}, which the operating system or the cluster uses; "
                "mounting there hides what the node needs. Use a new top-level directory such as /fsx"
            )
        if path in reserved.parents:
            return (
                f"{value} would hide {reserved}, which the operating system or the cluster uses; "
                "use a new top-level directory such as /fsx"
            )
    return None

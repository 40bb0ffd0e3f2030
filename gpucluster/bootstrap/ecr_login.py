"""ECR pulls for users, without handing them the instance role's credentials.

A registry password from `aws ecr get-login-password` lets its holder pull from the
repositories the role may read, and nothing else: no secret, no other AWS call. Login and
compute nodes therefore let every user run one root helper through sudo that prints that
password for a region, so the import-image job (and a user's own Enroot credentials file) can
log in to ECR while the role's credentials stay with root.
"""

from __future__ import annotations

from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster

HELPER = "/usr/local/sbin/gpucluster-ecr-password"
# No dot in the name: sudo skips files in sudoers.d whose names have one.
SUDOERS = "/etc/sudoers.d/gpucluster-ecr"


def login_command(region: str) -> str:
    """What a user runs for `region`'s registry password."""
    return f"sudo -n {HELPER} {region}"


def helper_files(resolved: ResolvedCluster) -> dict[str, str]:
    """The helper and the sudoers rule, keyed by the absolute paths login and compute nodes install."""
    values = {"cluster": resolved.name, "helper": HELPER}
    return {
        HELPER: render("metadata/ecr-password.sh.j2", **values),
        SUDOERS: render("metadata/ecr-sudoers.j2", **values),
    }


def bootstrap_settings() -> dict[str, str]:
    """What conf/cluster.sh tells lib/ecr.sh."""
    return {"helper": HELPER, "sudoers": SUDOERS}

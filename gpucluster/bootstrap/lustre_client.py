"""Where a node gets the Lustre client module when its kernel has none on the image.

The Deep Learning AMI ships lustre-client-modules for the kernel it boots, but the kernel
moves with each release and a module is built per exact kernel. The FSx guide,
"Installing the Lustre client" (Ubuntu), names the repository and its key:
https://docs.aws.amazon.com/fsx/latest/LustreGuide/install-lustre-client.html
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.bootstrap import boot_budget
from gpucluster.resolved import ResolvedCluster


@dataclass(frozen=True)
class LustreRepository:
    url: str
    # Ubuntu 24.04; the guide's `$(lsb_release -cs)`, fixed since the DLAMI is 24.04.
    suite: str
    key_url: str
    # Empty when the config records no fingerprint: the node then refuses to add the repository.
    key_fingerprint: str
    keyring: str
    sources_list: str


REPOSITORY_URL = "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu"
KEY_URL = "https://fsx-lustre-client-repo-public-keys.s3.amazonaws.com/fsx-ubuntu-public-key.asc"
UBUNTU_SUITE = "noble"
# The guide's paths, so a node set up by hand and one set up by us look the same.
KEYRING = "/usr/share/keyrings/fsx-ubuntu-public-key.gpg"
SOURCES_LIST = "/etc/apt/sources.list.d/fsxlustreclientrepo.list"
# Attempts at the key download (each retry waits RETRY_BACKOFF longer): in the boot budget.
KEY_ATTEMPTS = boot_budget.shell_values()["LUSTRE_KEY_ATTEMPTS"]


def repository(resolved: ResolvedCluster) -> LustreRepository:
    return LustreRepository(
        url=REPOSITORY_URL,
        suite=UBUNTU_SUITE,
        key_url=KEY_URL,
        key_fingerprint=resolved.software.lustre_repo_key_fingerprint or "",
        keyring=KEYRING,
        sources_list=SOURCES_LIST,
    )

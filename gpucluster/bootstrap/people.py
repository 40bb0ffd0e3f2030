"""The cluster's people on a node (lib/users.sh): their accounts with the uid and gid every
node gives them, homes on the shared /home, the ssh keys the config lists and sudo for its
administrators.

The keys and sudo rights live in root's files that each boot rewrites from the config, not in
the users' homes: a person removed from `users:` (or no longer `admin`) loses the way in on
every node at its next boot or head update, whatever their home still holds. The account
itself stays, so files they own keep a name.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.names import SSM_USER
from gpucluster.resolved.users import ResolvedUser

# name, uid, group, gid per line, tab-separated: what lib/users.sh reads.
USERS_FILE = "conf/users.tsv"
HOME_BASE = "/home"
SSH_KEYS_DIR = "/etc/ssh/gpucluster-keys"
# sshd reads the keys from root's directory as well as the user's own authorized_keys.
SSHD_KEYS_CONF = "/etc/ssh/sshd_config.d/gpucluster-keys.conf"
SUDOERS_FILE = "/etc/sudoers.d/gpucluster-admins"
# The sudo rule Session Manager's agent writes for its shared account.
SSM_SUDOERS = "/etc/sudoers.d/ssm-agent-users"


@dataclass(frozen=True)
class PeopleBoot:
    """What conf/cluster.sh tells lib/users.sh."""

    users_file: str
    home_base: str
    keys_dir: str
    sshd_conf: str
    sudoers_file: str
    ssm_user: str
    ssm_sudoers: str


def people_boot() -> PeopleBoot:
    return PeopleBoot(
        USERS_FILE, HOME_BASE, SSH_KEYS_DIR, SSHD_KEYS_CONF, SUDOERS_FILE, SSM_USER, SSM_SUDOERS
    )


def users_table(users: tuple[ResolvedUser, ...]) -> str:
    return "".join(f"{user.name}\t{user.uid}\t{user.group}\t{user.gid}\n" for user in users)


def access_files(cluster: str, users: tuple[ResolvedUser, ...]) -> dict[str, str]:
    """Root's files that let people in, keyed by their absolute path on every node."""
    admins = [user.name for user in users if user.admin]
    sudoers = [f"# The administrators of gpucluster {cluster} (users: with admin: true)."]
    sudoers += [f"{name} ALL=(ALL:ALL) NOPASSWD: ALL" for name in admins] or ["# none"]
    files = {
        SSHD_KEYS_CONF: f"# gpucluster {cluster}: the keys of users: as well as each user's own.\n"
        f"AuthorizedKeysFile .ssh/authorized_keys {SSH_KEYS_DIR}/%u\n",
        SUDOERS_FILE: "\n".join(sudoers) + "\n",
    }
    for user in users:
        if user.ssh_keys:
            files[f"{SSH_KEYS_DIR}/{user.name}"] = "".join(f"{key}\n" for key in user.ssh_keys)
    return files

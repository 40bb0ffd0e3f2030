"""ssh into a compute node lands in the user's job there: pam_slurm_adopt ends sshd's account
stack (with `PrologFlags=Contain` in slurm.conf every job has an extern step to adopt into),
and sshd's session stack runs without pam_systemd, which would move the adopted session out
of the job's cgroup into a systemd user slice (SchedMD's pam_slurm_adopt page: "PAM
Configuration"). Administrators (the image's sudo group and the config's `admin` users) get
in without a job through pam_access.

The compute bootstrap (lib/ssh.sh) installs these files and points /etc/pam.d/sshd at them;
the real-Slurm suite runs the same account lines against real slurmd
(tests/integration/test_ssh_adoption.py).
"""

from __future__ import annotations

from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster
from gpucluster.slurm import build

# pam_slurm_adopt comes with the pinned Slurm package (built from its contribs, against
# its libslurm), installed where PAM loads modules named without a path: the bootstrap
# checks it is there.
PAM_MODULE_DIR = build.PAM_MODULE_DIR
# /etc/pam.d/<name>, @included by sshd right after common-account.
ACCOUNT_INCLUDE = "gpucluster-slurm-adopt"
# /etc/pam.d/<name>: common-session without pam_systemd, @included by sshd instead of it.
SESSION_INCLUDE = "gpucluster-sshd-session"
ACCESS_FILE = "/etc/security/gpucluster-ssh-access.conf"
# Ubuntu's administrators; the AMI's default user is one of them.
ADMIN_GROUP = "sudo"
# The bootstrap puts the node's Slurm name here once it has named the node.
NODE_NAME_PLACEHOLDER = "@NODE_NAME@"
# pam_slurm_adopt's options as SchedMD recommends for production ("Module Options"): refuse
# a user without a job here, and refuse rather than let a session in unconfined when the
# job cannot be found or joined; with several jobs, the newest one. `nodename`: a dynamic
# node is in no NodeName line of slurm.conf, and Slurm 22.05's pam_slurm_adopt then finds
# no node for the host name and so no job ("No Slurm jobs found on node", seen in the
# real-Slurm suite), so the node says which it is.
ADOPT_OPTIONS = (
    "action_no_jobs=deny",
    "action_unknown=newest",
    "action_adopt_failure=deny",
    "action_generic_failure=deny",
    f"nodename={NODE_NAME_PLACEHOLDER}",
)


def account_include_path() -> str:
    return f"/etc/pam.d/{ACCOUNT_INCLUDE}"


def for_node(text: str, node_name: str) -> str:
    """A file of adoption_files as installed on the node named `node_name` (lib/ssh.sh does the same)."""
    return text.replace(NODE_NAME_PLACEHOLDER, node_name)


def adoption_files(resolved: ResolvedCluster) -> dict[str, str]:
    """The files a compute node installs (through for_node), keyed by their absolute path."""
    values = {
        "cluster": resolved.name,
        "access_file": ACCESS_FILE,
        "options": ADOPT_OPTIONS,
        "admin_group": ADMIN_GROUP,
        "admins": [user.name for user in resolved.users if user.admin],
        "account_include": account_include_path(),
    }
    return {
        account_include_path(): render("pam/slurm-adopt.j2", **values),
        ACCESS_FILE: render("pam/ssh-access.conf.j2", **values),
    }


def bootstrap_settings(resolved: ResolvedCluster) -> dict[str, object]:
    """What conf/cluster.sh tells lib/ssh.sh."""
    return {
        "module_dir": PAM_MODULE_DIR,
        "node_name_placeholder": NODE_NAME_PLACEHOLDER,
        "account_include": ACCOUNT_INCLUDE,
        "session_include": SESSION_INCLUDE,
        "files": sorted(adoption_files(resolved)),
    }

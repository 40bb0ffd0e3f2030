"""ssh into a compute node on real Slurm, through sshd's PAM account check: the account lines
and access file the compute bootstrap installs (gpucluster.bootstrap.ssh_adoption), in the
place sshd reads them, with the pinned Slurm's pam_slurm_adopt (built with it, as the
head builds it into the nodes' package) and the distribution's pam_access, against the
test nodes' slurmd (PrologFlags=Contain makes each job's extern step).

A tiny PAM program (pam_account.py) stands in for sshd: it runs as root, as sshd does, asks
PAM whether a user may log in, and reports where it landed. It runs in a node's network
namespace and in a private mount namespace, where /etc/pam.d and /etc/security hold the
rendered files with the node's name in them, as the compute bootstrap installs them.
"""

from __future__ import annotations

import json
import pwd
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucluster.bootstrap import ssh_adoption
from gpucluster.resolved import resolve
from tests.integration.accounting_daemons import ACCOUNT_USER
from tests.integration.cluster import SlurmCluster
from tests.integration.host import run
from tests.integration.prerequisites import unavailable
from tests.integration.slurm_build import pam_module

pytestmark = pytest.mark.slurm

HERE = Path(__file__).resolve().parent
PAM_DENIED = 6  # PAM_PERM_DENIED
# As /etc/pam.d/sshd includes the rendered account lines (lib/ssh.sh); only the account
# stack is asked for here.
SSHD_STACK = f"@include {ssh_adoption.ACCOUNT_INCLUDE}\n"
# Bind the rendered files over the node's /etc/pam.d and /etc/security, then ask PAM.
# The build's module lies under its prefix: a copy of PAM's module directory with it added
# stands in for the directory, as the Slurm package fills it on a node.
ENTER = r"""
pam_d=$1 security=$2 modules=$3 shadow=$4 adopt=$5; shift 5
mount --bind "$pam_d" /etc/pam.d
mount --bind "$security" /etc/security
cp -a "$modules/." "$shadow/"
cp "$adopt" "$shadow/pam_slurm_adopt.so"
mount --bind "$shadow" "$modules"
exec "$@"
"""


@pytest.fixture(scope="module")
def pam_files(slurm_cluster: SlurmCluster) -> Iterator[Path]:
    """<node>/pam.d and <node>/security: /etc/pam.d and /etc/security as each compute node
    holds them for sshd, with its own name in them (lib/ssh.sh)."""
    if slurm_cluster.tracking.why is not None:
        unavailable(
            "adopt ssh sessions", f"pam_slurm_adopt needs proctrack/cgroup: {slurm_cluster.tracking.why}"
        )
    with tempfile.TemporaryDirectory(dir=slurm_cluster.root) as scratch:
        root = Path(scratch)
        root.chmod(0o755)
        for node in slurm_cluster.nodes:
            for path, text in ssh_adoption.adoption_files(resolve(slurm_cluster.cfg)).items():
                directory = root / node / ("pam.d" if path.startswith("/etc/pam.d/") else "security")
                directory.mkdir(parents=True, exist_ok=True)
                (directory / Path(path).name).write_text(ssh_adoption.for_node(text, node))
            (root / node / "pam.d" / "sshd").write_text(SSHD_STACK)
        for node in slurm_cluster.nodes:
            (root / node / "modules").mkdir()
        yield root


def _login(cluster: SlurmCluster, pam_files: Path, node: str, user: str, *command: str) -> dict:
    """sshd's account check for `user` on test node `node`, from inside that node."""
    namespace = cluster.nodes[node].namespace
    inside = ["unshare", "--mount", "--propagation=private", "sh", "-c", ENTER, "enter"]
    inside += [str(pam_files / node / "pam.d"), str(pam_files / node / "security")]
    inside += [
        ssh_adoption.PAM_MODULE_DIR,
        str(pam_files / node / "modules"),
        str(pam_module(cluster.install.prefix)),
    ]
    inside += [sys.executable, str(HERE / "pam_account.py"), "sshd", user]
    result = run(
        "nsenter",
        f"--net=/var/run/netns/{namespace}",
        *cluster.install.command([*inside, *command]),
        env=cluster.env,
        timeout=60,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _running_job(cluster: SlurmCluster, node: str, *user: str) -> str:
    """A job holding `node` until cancelled, submitted as `user` (setpriv arguments) or root."""
    submitted = cluster.slurm(
        *user,
        "sbatch",
        "--parsable",
        f"--nodelist={node}",
        "--chdir=/tmp",
        "--output=/dev/null",
        "--wrap=sleep 600",
    )
    job = submitted.stdout.strip().split(";")[0]
    cluster.wait_job_state(job, {"RUNNING"}, 60)
    return job


def test_ssh_lands_in_the_users_job_and_is_refused_where_the_user_has_none(
    cluster: SlurmCluster, pam_files: Path
):
    user = pwd.getpwnam(ACCOUNT_USER)
    as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    with_job, without = sorted(cluster.nodes)
    jobs = [_running_job(cluster, with_job, *as_user), _running_job(cluster, without)]
    try:
        job = jobs[0]
        adopted = _login(cluster, pam_files, with_job, ACCOUNT_USER, "scontrol", "listpids", job, with_job)
        assert adopted["result"] == 0, adopted
        # The session (here the PAM program itself, as sshd's process on a node) is in the job's
        # extern step: its cgroup, and the pids slurmstepd tracks for the job.
        assert any(f"/job_{job}/step_extern" in line for line in adopted["cgroups"]), adopted["cgroups"]
        listed = [line.split() for line in adopted["command"].splitlines()[1:]]
        assert [str(adopted["pid"]), job, "extern"] in [row[:3] for row in listed], adopted["command"]

        refused = _login(cluster, pam_files, without, ACCOUNT_USER)
        assert refused["result"] == PAM_DENIED, refused
        assert any("you have no active jobs on this node" in message for message in refused["messages"]), (
            refused
        )
        assert not any(f"/job_{jobs[1]}/" in line for line in refused["cgroups"])

        # Administrators get in without a job there (pam_access), and are not adopted.
        admin = _login(cluster, pam_files, without, "root")
        assert admin["result"] == 0, admin
        assert not any("/job_" in line for line in admin["cgroups"]), admin["cgroups"]
    finally:
        cluster.slurm("scancel", *jobs)

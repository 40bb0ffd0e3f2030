"""The config's people on the real cluster: each person's job runs on the compute nodes under
their own uid, and a job from a uid the head cannot name (a person set up on the login node
only, as Session Manager's ssm-user is) is refused when it is submitted, with the fix, instead
of being held for ever."""

from __future__ import annotations

import pwd
from pathlib import Path

import pytest

from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from tests.integration.accounting_daemons import SUITE_ACCOUNT, SUITE_PEOPLE
from tests.integration.cluster import SlurmCluster
from tests.integration.conftest import REGISTER_TIMEOUT
from tests.integration.host import wait_for
from tests.integration.login import LoginNode, sackd_unit
from tests.integration.people import home_base

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 60
# A login of its own whose /etc/passwd has one more person than the head's.
LOGIN_ONLY_INDEX = 8
LOGIN_ONLY = ("gcsstranger", 2199)


def _as(name: str) -> list[str]:
    user = pwd.getpwnam(name)
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]


@pytest.mark.parametrize("name", sorted(SUITE_PEOPLE))
def test_a_persons_job_runs_on_a_compute_node_under_their_own_uid(cluster: SlurmCluster, name: str):
    home = home_base(cluster.root) / name
    assert home.is_dir() and home.stat().st_uid == SUITE_PEOPLE[name], "create_users made the home"
    submitted = cluster.slurm(
        *_as(name),
        "sbatch",
        "--parsable",
        f"--chdir={home}",
        "--output=who.out",
        "--wrap=echo $(id -u) $(id -un) $(hostname)",
    )
    job = submitted.stdout.strip().split(";")[0]
    info = cluster.wait_job_state(job, {"COMPLETED", "FAILED"}, JOB_TIMEOUT)
    assert info["JobState"] == "COMPLETED", info
    assert info["UserId"] == f"{name}({SUITE_PEOPLE[name]})"
    assert info["Account"] == SUITE_ACCOUNT, "users:'s account is the person's default"
    uid, user, host = (home / "who.out").read_text().split()
    assert (int(uid), user) == (SUITE_PEOPLE[name], name)
    assert host in cluster.nodes and host == info["BatchHost"]


@pytest.fixture(scope="module")
def stranger_login(slurm_cluster: SlurmCluster, tmp_path_factory: pytest.TempPathFactory) -> LoginNode:
    """A login whose /etc/passwd also has LOGIN_ONLY, whom the head does not know."""
    name, uid = LOGIN_ONLY
    passwd = tmp_path_factory.mktemp("login-passwd") / "passwd"
    passwd.write_text(Path("/etc/passwd").read_text() + f"{name}:x:{uid}:{uid}::/tmp:/bin/sh\n")
    passwd.chmod(0o644)
    namespace, _ = slurm_cluster.network.add_namespace(LOGIN_ONLY_INDEX)
    login = LoginNode(slurm_cluster, namespace)
    unit = sackd_unit(slurm_conf.conf_server(resolve(slurm_cluster.cfg), slurm_cluster.site))
    login.start(unit.argv, notify=unit.notify, passwd=passwd)
    wait_for(
        "sackd to fetch the served configuration",
        lambda: login.path("/run/slurm/conf/slurm.conf").exists(),
        timeout=REGISTER_TIMEOUT,
    )
    return login


def test_a_job_from_a_uid_the_head_cannot_name_is_refused_at_submit_with_the_fix(
    cluster: SlurmCluster, stranger_login: LoginNode
):
    name, uid = LOGIN_ONLY
    refused = stranger_login.run(
        "setpriv",
        f"--reuid={uid}",
        f"--regid={uid}",
        "--clear-groups",
        "sbatch",
        "--chdir=/tmp",
        "--wrap=true",
        check=False,
    )
    assert refused.returncode != 0, refused.stdout
    assert f"user id {uid} is not a user of cluster {cluster.cfg.name}" in refused.stderr, refused.stderr
    assert "add the person to users:" in refused.stderr
    assert "Unable to resolve user ID to user name" in refused.stderr
    jobs = cluster.slurm("squeue", "-h", "-o", "%i %u %r").stdout
    assert not jobs.strip(), f"nothing was queued, held or otherwise: {jobs}"

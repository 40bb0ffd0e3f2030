"""The people of users: on a simulated node (tests/shell_harness.py): lib/users.sh makes their
accounts with the real groupadd/useradd under the node's root, before any Slurm daemon, keeps
them on a second run, installs root's key and sudo files, and stops a node whose image gives
a listed name another uid. tests/integration/test_users.py runs the same step for real."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap import people
from gpucluster.config import ClusterConfig
from tests.bootstrap_runs import example
from tests.shell_harness import Node

ALICE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPJMigycB2wtT+0hvm4e1nfAXpY/AkalXdjcfPs60r6p alice@laptop"


def _with_people() -> ClusterConfig:
    cfg = example("default")
    users = [
        {"name": "alice", "uid": 2001, "ssh_keys": [ALICE_KEY], "admin": True},
        {"name": "bob", "uid": 2002, "group": "ml", "gid": 3000},
    ]
    return ClusterConfig.model_validate({**cfg.model_dump(mode="json"), "users": users})


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


@pytest.mark.parametrize(
    ("role", "group", "daemon_step"),
    [("login", None, "configure_slurm_client"), ("compute", "gpu", "start_slurmd")],
)
def test_every_node_makes_the_same_accounts_before_its_slurm_daemon(tmp_path, role, group, daemon_step):
    node = Node(tmp_path, _with_people())
    run = node.run(role, group)
    assert run.returncode == 0, run.output
    passwd = _lines(node.root / "etc/passwd")
    assert "alice:x:2001:2001:gpucluster user:/home/alice:/bin/bash" in passwd
    assert "bob:x:2002:3000:gpucluster user:/home/bob:/bin/bash" in passwd
    assert {"alice:x:2001:", "ml:x:3000:"} <= set(_lines(node.root / "etc/group"))
    # No password to log in with, and not locked: sshd takes the keys.
    assert "alice:*:" in (node.root / "etc/shadow").read_text()
    home = node.root / "home/alice"
    assert (home.stat().st_uid, home.stat().st_gid, home.stat().st_mode & 0o777) == (2001, 2001, 0o700)
    assert run.output.index("step create_users") < run.output.index(f"step {daemon_step}")


def test_root_keeps_the_keys_and_sudo_and_a_removed_persons_keys_go(tmp_path):
    node = Node(tmp_path, _with_people())
    stale = node.root / people.SSH_KEYS_DIR.lstrip("/") / "mallory"
    stale.parent.mkdir(parents=True)
    stale.write_text("ssh-ed25519 AAAA mallory\n")
    run = node.run("login")
    assert run.returncode == 0, run.output
    keys = node.root / people.SSH_KEYS_DIR.lstrip("/")
    assert sorted(path.name for path in keys.iterdir()) == ["alice"], "bob has no keys, mallory left users:"
    assert (keys / "alice").read_text() == ALICE_KEY + "\n"
    assert "removed the keys of mallory, who is no longer in users:" in run.output
    sudoers = node.root / people.SUDOERS_FILE.lstrip("/")
    rules = [line for line in _lines(sudoers) if not line.startswith("#")]
    assert rules == ["alice ALL=(ALL:ALL) NOPASSWD: ALL"]
    assert sudoers.stat().st_mode & 0o777 == 0o440
    visudo = shutil.which("visudo")
    if visudo is None:
        pytest.skip("visudo is not installed (apt-get install sudo)")
    checked = subprocess.run([visudo, "-c", "-f", str(sudoers)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    sshd = _lines(node.root / people.SSHD_KEYS_CONF.lstrip("/"))
    assert f"AuthorizedKeysFile .ssh/authorized_keys {people.SSH_KEYS_DIR}/%u" in sshd


def test_a_second_run_changes_no_account(tmp_path):
    node = Node(tmp_path, _with_people())
    assert node.run("login").returncode == 0
    before = {name: (node.root / "etc" / name).read_text() for name in ("passwd", "group", "shadow")}
    again = node.run("login")
    assert again.returncode == 0, again.output
    assert {name: (node.root / "etc" / name).read_text() for name in before} == before
    assert not again.called("useradd") and not again.called("groupadd"), again.calls


def test_an_image_that_gives_a_listed_name_another_uid_stops_the_node(tmp_path):
    node = Node(tmp_path, _with_people())
    passwd = node.root / "etc/passwd"
    passwd.write_text(passwd.read_text() + "alice:x:1500:1500::/home/alice:/bin/bash\n")
    run = node.run("login")
    assert run.returncode != 0
    assert "user alice exists on this node with uid 1500, not 2001 as users: says" in run.output


def test_session_managers_shared_account_gets_no_sudo_and_no_shell(tmp_path):
    node = Node(tmp_path, _with_people())
    run = node.run("login")
    assert run.returncode == 0, run.output
    ssm = [line for line in _lines(node.root / "etc/passwd") if line.startswith(f"{people.SSM_USER}:")]
    assert len(ssm) == 1 and ssm[0].endswith(":/usr/sbin/nologin"), ssm
    assert int(ssm[0].split(":")[2]) < 1000, "a system account, outside the people's range"


def test_an_ssm_user_the_image_made_with_sudo_loses_it(tmp_path):
    node = Node(tmp_path, _with_people())
    passwd = node.root / "etc/passwd"
    passwd.write_text(passwd.read_text() + "ssm-user:x:1001:1001::/home/ssm-user:/bin/sh\n")
    sudoers = node.root / people.SSM_SUDOERS.lstrip("/")
    sudoers.parent.mkdir(parents=True, exist_ok=True)
    sudoers.write_text("ssm-user ALL=(ALL) NOPASSWD:ALL\n")
    run = node.run("login")
    assert run.returncode == 0, run.output
    assert "ssm-user:x:1001:1001::/home/ssm-user:/usr/sbin/nologin" in _lines(passwd)
    assert not sudoers.exists()
    assert f"removed {people.SSM_SUDOERS}: ssm-user has no sudo" in run.output


def test_an_administrators_file_visudo_refuses_stops_the_node(tmp_path):
    node = Node(tmp_path, _with_people())
    node.env["SIM_SUDOERS_BAD"] = people.SUDOERS_FILE
    run = node.run("login")
    assert run.returncode != 0
    assert f"{people.SUDOERS_FILE} does not parse (visudo -cf)" in run.output

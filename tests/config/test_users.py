"""`users:`: the people every node creates. Each mistake is one line naming its field (exit 2
through `gpucluster validate`, tests/config/test_validation.py)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from gpucluster.resolved import resolve
from tests.config.test_accounting import TEAMS, parsed, problems
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
# Real keys (ssh-keygen), whose private halves were thrown away.
ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPJMigycB2wtT+0hvm4e1nfAXpY/AkalXdjcfPs60r6p alice@laptop"
RSA = (
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQDSwMuuAPFCgORiKc9Ok9oCuNR3t4HKuhf0mpt8UEjTmwAW+4GsO8C58vDS"
    "p6nmK8M/j6GWNGe9Hmcag8CQ5obdFFgmUjk8gsqC0uEhfOoYIaDjmXEzLRORdIapcwEfwvWd+GCE42LQH9Civ4ZS4cRcMGZ7"
    "WPAFiu7xSs9O3A/1bumQWshxjKb3ffwQtoBV7zs6gUtQqqH+8a1f/48tIcogxyN7mQFnIUh9MTsG+3jWRUhX3PPZ8h7Ry2x6"
    "poTtr3IwaBT4ujSpLXns/0TpinzVUNkEoHeVrl6fCEQX2nR+94rsM2840NLmlkJREldf4IF4oSWDAEnXUpX9vX+YzOd9"
)


def with_users(users: list[dict], **top: object) -> dict:
    data = copy.deepcopy(DEFAULT)
    data["users"] = users
    data.update(top)
    return data


def test_a_team_is_resolved_with_its_groups_keys_and_accounts():
    cfg = parsed(
        with_users(
            [
                {"name": "alice", "uid": 2001, "ssh_keys": [ED25519], "account": "team_b", "admin": True},
                {"name": "bob", "uid": 2002, "group": "ml", "gid": 3000, "ssh_keys": [RSA]},
                {"name": "dave", "uid": 2003, "group": "ml", "gid": 3000, "account": "ops"},
            ],
            accounting=TEAMS,
        )
    )
    resolved = resolve(cfg)
    people = {user.name: user for user in resolved.users}
    assert (people["alice"].group, people["alice"].gid, people["alice"].admin) == ("alice", 2001, True)
    assert (people["bob"].group, people["bob"].gid, people["bob"].ssh_keys) == ("ml", 3000, (RSA,))
    assert resolved.accounting is not None
    # A user's account is their default, before the first account that lists them (team-a).
    assert resolved.accounting.default_accounts["alice"] == "team_b"
    assert resolved.accounting.default_accounts["dave"] == "ops"
    members = {account.name: account.users for account in resolved.accounting.accounts}
    assert members["ops"] == ["dave"] and members["team_b"] == ["carol", "alice"]


def _user(**values: object) -> dict:
    return {"name": "alice", "uid": 2001, **values}


REFUSED = {
    "repeated-name": (with_users([_user(), _user(uid=2002)]), "users.1.name", "listed twice"),
    "repeated-uid": (with_users([_user(), _user(name="bob")]), "users.1.uid", "also alice's uid"),
    "uid-of-the-images-user": (with_users([_user(uid=1000)]), "users.0.uid", "ubuntu is 1000"),
    "system-uid": (with_users([_user(uid=999)]), "users.0.uid", "outside 1001-59999"),
    "distribution-uid": (with_users([_user(uid=65534)]), "users.0.uid", "outside 1001-59999"),
    "low-gid": (with_users([_user(gid=100)]), "users.0.gid", "outside 1001-59999"),
    "a-system-name": (with_users([_user(name="ssm-user")]), "users.0.name", "nodes have already"),
    "not-a-login-name": (with_users([_user(name="Alice")]), "users.0.name", "not a Linux login name"),
    "uid-as-text": (with_users([_user(uid="2001")]), "users.0.uid", ""),
    "a-group-with-two-gids": (
        with_users([_user(group="ml", gid=3000), _user(name="bob", uid=2002, group="ml", gid=3001)]),
        "users.1.gid",
        "a group has one gid",
    ),
    "a-gid-with-two-names": (
        with_users([_user(group="ml", gid=3000), _user(name="bob", uid=2002, group="ai", gid=3000)]),
        "users.1.gid",
        "is group 'ml' already",
    ),
    "another-users-own-group": (
        with_users([_user(), _user(name="bob", uid=2002, group="alice", gid=3000)]),
        "users.1.gid",
        "a group has one gid",
    ),
    "a-private-key": (
        with_users([_user(ssh_keys=["-----BEGIN OPENSSH PRIVATE KEY-----"])]),
        "users.0.ssh_keys.0",
        "is a private key",
    ),
    "an-unknown-key-type": (
        with_users([_user(ssh_keys=[ED25519.replace("ssh-ed25519", "ssh-dss", 1)])]),
        "users.0.ssh_keys.0",
        "key type 'ssh-dss'",
    ),
    "a-key-of-another-type": (
        with_users([_user(ssh_keys=[ED25519.replace("ssh-ed25519", "ssh-rsa", 1)])]),
        "users.0.ssh_keys.0",
        "is not a whole ssh-rsa key",
    ),
    "a-truncated-key": (
        with_users([_user(ssh_keys=[ED25519.split()[0] + " " + ED25519.split()[1][:-8]])]),
        "users.0.ssh_keys.0",
        "key 1 has a key part",
    ),
    "two-keys-on-one-line": (
        with_users([_user(ssh_keys=[ED25519 + "\n" + RSA])]),
        "users.0.ssh_keys.0",
        "not one OpenSSH public key line",
    ),
    "an-account-without-accounting": (
        with_users([_user(account="team-a")]),
        "users.0.account",
        "no accounting",
    ),
    "an-unknown-account": (
        with_users([_user(account="team-z")], accounting=TEAMS),
        "users.0.account",
        "unknown account 'team-z'",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_each_mistake_is_one_line_naming_its_field(case):
    data, field, words = REFUSED[case]
    found = problems(data)
    assert len(found) == 1, found
    assert found[0].startswith(f"{field}: "), found
    assert words in found[0], found


def test_validate_exits_2_naming_the_file_and_the_field(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(with_users([_user(), _user(name="bob")])))
    result = subprocess.run(
        [sys.executable, "-m", "gpucluster", "validate", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert f"{path}: users.1.uid: 2001 is also alice's uid" in result.stderr
    assert "Traceback" not in result.stderr


def test_readmes_users_sample_is_a_valid_team():
    readme = (REPO / "README.md").read_text()
    block = readme.split("### Users and access", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    cfg = parsed(with_users(yaml.safe_load(block)["users"], accounting=TEAMS))
    assert [(user.name, user.uid, user.admin) for user in cfg.users] == [
        ("alice", 2001, True),
        ("bob", 2002, False),
    ]
    assert cfg.users[0].ssh_keys and cfg.users[1].group_id == 3000

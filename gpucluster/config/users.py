"""`users:`: the people of a cluster. Every node creates the same accounts, with the same uid
and gid, before its Slurm daemons start: Slurm and the shared /home know a person by number,
so a uid that differs between the login and a compute node is another person there.

Numbers start at 1001: the node image's own user (`ubuntu`) is 1000, Debian gives system
accounts numbers below 1000, and 60000 and above belong to the distribution (`nobody` is
65534). A group defaults to the user's own (its name and the uid as gid); a group that
several users share is named with the same gid by each.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct

from pydantic import Field, field_validator

from gpucluster.config.accounting import AccountingConfig, SlurmName, UserName
from gpucluster.config.fields import StrictModel, fail, fail_at

FIRST_ID = 1001
LAST_ID = 59999
# Accounts an Ubuntu node has or gpucluster's own services make: a person of that name would
# be the service (or fail to be created).
RESERVED_NAMES = frozenset(
    {
        "root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp",
        "proxy", "www-data", "backup", "list", "irc", "gnats", "nobody", "systemd-network",
        "systemd-resolve", "systemd-timesync", "messagebus", "syslog", "uuidd", "tcpdump",
        "sshd", "landscape", "pollinate", "ubuntu", "ssm-user", "slurm", "slurmrestd", "munge",
        "mysql", "lxd", "admin", "sudo", "users", "docker",
    }
)  # fmt: skip
# OpenSSH's public key types, and how many fields each one's key has (the type name first,
# then the key; a security key's also names its application).
SSH_KEY_TYPES = {
    "ssh-ed25519": 2,
    "ssh-rsa": 3,
    "ecdsa-sha2-nistp256": 3,
    "ecdsa-sha2-nistp384": 3,
    "ecdsa-sha2-nistp521": 3,
    "sk-ssh-ed25519@openssh.com": 3,
    "sk-ecdsa-sha2-nistp256@openssh.com": 4,
}
_KEY_LINE = re.compile(r"^(?P<type>\S+) (?P<blob>[A-Za-z0-9+/]+={0,2})(?: (?P<comment>[^\r\n]*))?$")


def _id_problem(value: int) -> str | None:
    if FIRST_ID <= value <= LAST_ID:
        return None
    return (
        f"{value} is outside {FIRST_ID}-{LAST_ID}: below are the image's own accounts (ubuntu is 1000, "
        "system accounts below), above the distribution's (nobody is 65534); pick a number in the range"
    )


def ssh_key_problem(line: str) -> str | None:
    """What is wrong with one OpenSSH public key line (`type base64 [comment]`), if anything."""
    if "PRIVATE KEY" in line:
        return "is a private key; paste the public key (the .pub file's line) and keep the private one"
    found = _KEY_LINE.match(line)
    if found is None:
        return (
            "is not one OpenSSH public key line (type, base64 key, optional comment); "
            "paste the .pub file's line"
        )
    kind = found["type"]
    if kind not in SSH_KEY_TYPES:
        return f"has key type {kind!r}; use one of {', '.join(sorted(SSH_KEY_TYPES))}"
    try:
        fields = _wire_fields(base64.b64decode(found["blob"], validate=True))
    except (binascii.Error, ValueError):
        fields = []
    if len(fields) != SSH_KEY_TYPES[kind] or fields[0] != kind.encode():
        return f"has a key part that is not a whole {kind} key (a truncated or mixed-up paste?)"
    return None


def _wire_fields(blob: bytes) -> list[bytes]:
    """The length-prefixed fields of a key in SSH's wire format (RFC 4253, 6.6)."""
    fields = []
    while blob:
        if len(blob) < 4:
            raise ValueError("a field's length is cut short")
        (size,) = struct.unpack(">I", blob[:4])
        if len(blob) < 4 + size:
            raise ValueError("a field is cut short")
        fields.append(blob[4 : 4 + size])
        blob = blob[4 + size :]
    return fields


class UserConfig(StrictModel):
    name: UserName = Field(description="Login name, the same on every node.")
    uid: int = Field(description=f"User id, {FIRST_ID}-{LAST_ID}, unique in the cluster.")
    group: UserName | None = Field(default=None, description="Primary group; null: one named like the user.")
    gid: int | None = Field(default=None, description="The group's id; null: the uid.")
    ssh_keys: list[str] = Field(
        default_factory=list,
        description="OpenSSH public keys (a .pub file's line each) that may log in as this user.",
    )
    account: SlurmName | None = Field(
        default=None,
        description="With accounting: the Slurm account the user's jobs are charged to by default "
        "(one of accounting.accounts); the user becomes a member of it.",
    )
    admin: bool = Field(
        default=False,
        description="Root through sudo on every node, and ssh into compute nodes without a job there.",
    )

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_NAMES:
            raise fail("reserved_user", f"'{value}' is an account the nodes have already; pick another name")
        return value

    @field_validator("uid", "gid")
    @classmethod
    def _in_range(cls, value: int | None) -> int | None:
        problem = None if value is None else _id_problem(value)
        if problem:
            raise fail("user_id", problem)
        return value

    @field_validator("ssh_keys")
    @classmethod
    def _keys(cls, value: list[str]) -> list[str]:
        for index, line in enumerate(value):
            problem = ssh_key_problem(line)
            if problem:
                raise fail_at(str(index), f"key {index + 1} {problem}")
        return value

    @property
    def group_name(self) -> str:
        return self.group if self.group is not None else self.name

    @property
    def group_id(self) -> int:
        return self.gid if self.gid is not None else self.uid


def users_problem(users: list[UserConfig]) -> tuple[str, str] | None:
    """(field, message) for what the list of users gets wrong as a whole: repeated names or
    uids, a group named with two gids or one gid given two names."""
    seen_names: dict[str, int] = {}
    seen_uids: dict[int, str] = {}
    groups: dict[str, tuple[int, str]] = {}
    gids: dict[int, str] = {}
    for index, user in enumerate(users):
        at = f"users.{index}"
        if user.name in seen_names:
            return (
                f"{at}.name",
                f"'{user.name}' is listed twice (also users.{seen_names[user.name]}); list each person once",
            )
        if user.uid in seen_uids:
            return (
                f"{at}.uid",
                f"{user.uid} is also {seen_uids[user.uid]}'s uid; every person needs a uid of their own",
            )
        seen_names[user.name] = index
        seen_uids[user.uid] = user.name
        name, gid = user.group_name, user.group_id
        if name in groups and groups[name][0] != gid:
            first_gid, first_user = groups[name]
            return (
                f"{at}.gid",
                f"group '{name}' is {gid} here but {first_gid} for {first_user}; a group has one gid",
            )
        if gid in gids and gids[gid] != name:
            return f"{at}.gid", f"gid {gid} is group '{gids[gid]}' already; give group '{name}' another gid"
        groups.setdefault(name, (gid, user.name))
        gids.setdefault(gid, name)
    return None


def membership_problem(
    users: list[UserConfig], accounting: AccountingConfig | None
) -> tuple[str, str] | None:
    """(field, message) where a user's Slurm account does not exist. Account members need not be
    in users: (people may also come from a directory service)."""
    defined = [] if accounting is None else [account.name for account in accounting.accounts]
    for index, user in enumerate(users):
        if user.account is None:
            continue
        if accounting is None:
            return (
                f"users.{index}.account",
                f"names account '{user.account}' but the cluster has no accounting; "
                "remove it or add accounting:",
            )
        if user.account not in defined:
            return (
                f"users.{index}.account",
                f"unknown account '{user.account}'; define it under accounting.accounts "
                f"(defined: {', '.join(defined) or 'none'})",
            )
    return None

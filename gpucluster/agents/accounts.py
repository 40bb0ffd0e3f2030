"""Accounts, users and QOS from the cluster's config, applied to slurmdbd with sacctmgr.

Run by the head at every boot and bundle update with the desired state as JSON (rendered
from `accounting:`). Applying it twice changes nothing. What gpucluster made is marked
(QOS description and account organization `gpucluster`), and only marked things are ever
removed: an account or QOS an administrator added by hand stays. Accounts are shared by
every cluster of a slurmdbd; an account's and a user's associations are this cluster's
only (`cluster=`), so removing them here leaves the other clusters' alone.

It runs once slurmctld has registered with slurmdbd: that registration makes the gres/gpu
TRES the QOS limits name. Order: QOS first (accounts name them), then accounts, users and
their default account, then whatever was removed from the config: users, accounts, and
last QOS no account uses.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpucluster.agents import runtime
from gpucluster.agents.scontrol import CommandResult, Runner, run_command

LOG = logging.getLogger("accounts")

MARK = "gpucluster"
ROOT_ACCOUNT = "root"
# sacctmgr's answer to a modify that changes nothing, which it exits 1 for.
NOTHING_MODIFIED = "Nothing modified"


class SacctmgrError(RuntimeError):
    pass


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int = 0
    max_wall_minutes: int | None = None
    max_gpus_per_user: int | None = None
    max_gpus_per_job: int | None = None
    max_jobs_per_user: int | None = None

    def settings(self) -> list[str]:
        """sacctmgr's `set` words; -1 clears a limit the config no longer sets."""

        def limit(value: int | None) -> str:
            return "-1" if value is None else str(value)

        def gpus(value: int | None) -> str:
            return "gres/gpu=-1" if value is None else f"gres/gpu={value}"

        return [
            f"priority={self.priority}",
            f"maxwall={limit(self.max_wall_minutes)}",
            f"maxtresperuser={gpus(self.max_gpus_per_user)}",
            f"maxtresperjob={gpus(self.max_gpus_per_job)}",
            f"maxjobsperuser={limit(self.max_jobs_per_user)}",
        ]


@dataclass(frozen=True)
class Account:
    name: str
    fairshare: int
    qos: tuple[str, ...]
    default_qos: str
    users: tuple[str, ...]


@dataclass(frozen=True)
class DesiredState:
    cluster: str
    qos: tuple[Qos, ...]
    accounts: tuple[Account, ...]
    # user -> the account of jobs submitted without --account
    default_accounts: dict[str, str]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DesiredState:
        return cls(
            cluster=data["cluster"],
            qos=tuple(Qos(**entry) for entry in data["qos"]),
            accounts=tuple(
                Account(
                    name=entry["name"],
                    fairshare=entry["fairshare"],
                    qos=tuple(entry["qos"]),
                    default_qos=entry["default_qos"],
                    users=tuple(entry["users"]),
                )
                for entry in data["accounts"]
            ),
            default_accounts=dict(data["default_accounts"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "qos": [vars(qos) for qos in self.qos],
            "accounts": [
                {**vars(account), "qos": list(account.qos), "users": list(account.users)}
                for account in self.accounts
            ],
            "default_accounts": self.default_accounts,
        }


@dataclass
class Sacctmgr:
    runner: Runner

    def show(self, *args: str) -> list[list[str]]:
        result = self._run(["sacctmgr", "-n", "-P", "show", *args])
        return [line.split("|") for line in result.stdout.splitlines() if line.strip()]

    def change(self, *args: str) -> None:
        result = self.runner(["sacctmgr", "-i", *args])
        if result.returncode != 0 and NOTHING_MODIFIED in result.output:
            return
        self._check(result)
        LOG.debug("sacctmgr %s", " ".join(args))

    def _run(self, argv: list[str]) -> CommandResult:
        return self._check(self.runner(argv))

    @staticmethod
    def _check(result: CommandResult) -> CommandResult:
        if result.returncode != 0:
            raise SacctmgrError(
                f"`{' '.join(result.argv)}` failed ({result.returncode}): {result.output or 'no output'}"
            )
        return result


def snapshot(sacctmgr: Sacctmgr, cluster: str) -> list[list[str]]:
    """What `apply` may change, as sacctmgr prints it (a modify to the same values is
    accepted without a word, so a change shows only here)."""
    return [
        *sacctmgr.show("qos", "format=name,description,priority,maxwall,maxtrespu,maxtres,maxjobspu"),
        *sacctmgr.show("association", f"cluster={cluster}", "format=account,user,fairshare,qos,defaultqos"),
        *sacctmgr.show("user", f"cluster={cluster}", "format=user,defaultaccount"),
    ]


def apply(state: DesiredState, runner: Runner) -> bool:
    """Make slurmdbd hold `state` for its cluster; True when that changed anything."""
    sacctmgr = Sacctmgr(runner)
    cluster = state.cluster
    before = snapshot(sacctmgr, cluster)
    _apply(sacctmgr, state)
    return snapshot(sacctmgr, cluster) != before


def _apply(sacctmgr: Sacctmgr, state: DesiredState) -> None:
    cluster = state.cluster
    known_clusters = {row[0] for row in sacctmgr.show("cluster", "format=cluster")}
    if cluster not in known_clusters:
        sacctmgr.change("add", "cluster", cluster)
    if state.qos and ["gres", "gpu"] not in sacctmgr.show("tres", "format=type,name"):
        raise SacctmgrError(
            f"slurmdbd tracks no gres/gpu yet, which the QOS limits name; slurmctld adds it when it "
            f"registers with AccountingStorageTRES=gres/gpu: start slurmctld (cluster {cluster}) first"
        )
    managed_qos = {row[0] for row in sacctmgr.show("qos", "format=name,description") if row[1:] == [MARK]}
    all_qos = {row[0] for row in sacctmgr.show("qos", "format=name")}
    for qos in state.qos:
        if qos.name not in all_qos:
            sacctmgr.change("add", "qos", qos.name, f"description={MARK}")
        sacctmgr.change("modify", "qos", "where", f"name={qos.name}", "set", *qos.settings())

    managed_accounts = {
        row[0] for row in sacctmgr.show("account", "format=account,organization") if row[1:] == [MARK]
    }
    associations = sacctmgr.show("association", f"cluster={cluster}", "format=account,user")
    accounts_here = {account for account, user in associations if not user}
    users_here = {(account, user) for account, user in associations if user}
    for account in state.accounts:
        settings = [
            f"fairshare={account.fairshare}",
            f"qos={','.join(account.qos)}",
            f"defaultqos={account.default_qos}",
        ]
        if account.name not in accounts_here:
            sacctmgr.change(
                "add",
                "account",
                account.name,
                f"cluster={cluster}",
                f"organization={MARK}",
                f"description={MARK}",
                *settings,
            )
        else:
            sacctmgr.change(
                "modify", "account", "where", f"name={account.name}", f"cluster={cluster}", "set", *settings
            )
        for user in account.users:
            if (account.name, user) not in users_here:
                sacctmgr.change("add", "user", user, f"account={account.name}", f"cluster={cluster}")
    for user, default in sorted(state.default_accounts.items()):
        sacctmgr.change(
            "modify",
            "user",
            "where",
            f"name={user}",
            f"cluster={cluster}",
            "set",
            f"defaultaccount={default}",
        )

    wanted_users = {(account.name, user) for account in state.accounts for user in account.users}
    wanted_accounts = {account.name for account in state.accounts}
    ours = managed_accounts - {ROOT_ACCOUNT}
    # Users dropped from an account that stays; a dropped account takes its users along.
    for name, user in sorted(users_here - wanted_users):
        if name in ours and name in wanted_accounts:
            sacctmgr.change(
                "delete", "user", "where", f"name={user}", f"account={name}", f"cluster={cluster}"
            )
    for name in sorted((accounts_here & ours) - wanted_accounts):
        sacctmgr.change("delete", "account", "where", f"name={name}", f"cluster={cluster}")
    for name in sorted(managed_qos - {qos.name for qos in state.qos}):
        sacctmgr.change("delete", "qos", "where", f"name={name}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("state", type=Path, help="the desired accounts, users and QOS (JSON)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail")
    args = parser.parse_args(argv)
    runtime.configure_logging(args.verbose)
    try:
        state = DesiredState.from_json(json.loads(args.state.read_text()))
        changed = apply(state, run_command)
    except (OSError, ValueError, KeyError, TypeError) as error:
        LOG.error("cannot read %s: %s", args.state, error)
        return 2
    except SacctmgrError as error:
        LOG.error("%s", error)
        return 1
    LOG.info("accounts of cluster %s %s", state.cluster, "applied" if changed else "were already in place")
    return 0


if __name__ == "__main__":
    sys.exit(main())

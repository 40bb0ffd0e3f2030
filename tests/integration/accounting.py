"""Accounting of the session cluster, for real: MariaDB, slurmdbd with the rendered
slurmdbd.conf, the cluster and its accounts registered, and slurmrestd with JWT.

The suite's cluster renders with `SUITE_ACCOUNTING` (fair share and the REST API on), so
every real-Slurm test runs under AccountingStorageEnforce as a deployed cluster with
accounting does: root is in the root account Slurm makes for each cluster, `nobody` in
SUITE_ACCOUNT, and OUTSIDER in none."""

from __future__ import annotations

import pwd
import secrets
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.slurm.accounting import AccountingSettings, AccountingSite
from tests.integration.accounting_daemons import (
    ACCOUNT_USER,
    RESTD_USER,
    SLURMRESTD_PORT,
    SUITE_ACCOUNT,
    Daemon,
    MariaDb,
    write_secret_file,
)
from tests.integration.host import Teardown, require_free_port, run
from tests.integration.installs import SlurmInstall
from tests.integration.network import CONTROLLER_IP

SUITE_ACCOUNTING = AccountingSettings(fair_share=True, rest_api=True)
REST_URL = f"http://{CONTROLLER_IP}:{SLURMRESTD_PORT}"
# slurmctld writes its associations' usage here when it stops and every 5 minutes
# (PERIODIC_CHECKPOINT); once the cluster is known, a start without it is fatal ("No Assoc
# usage file ... to recover").
ASSOC_USAGE = "assoc_usage"


@dataclass
class SuiteAccounting:
    """Started before slurmctld (which registers with slurmdbd at start), stopped after it."""

    cluster_name: str
    root: Path
    site: AccountingSite
    install: SlurmInstall
    env: dict[str, str]
    teardown: Teardown
    mariadb: MariaDb = field(init=False)
    slurmdbd: Daemon = field(init=False)
    restd: Daemon | None = None

    def __post_init__(self) -> None:
        self.mariadb = MariaDb(self.root, self.teardown)
        self.slurmdbd = Daemon(
            "slurmdbd",
            self.install.command(["slurmdbd", "-D"]),
            self.root / "log" / "slurmdbd.stdout",
            self.env,
            self._dbd_answers,
        )

    def start(self) -> None:
        """The database, the secrets the head writes at boot, slurmdbd, the cluster and its
        accounts; slurmctld's files must be written already (slurmdbd.conf among them)."""
        self.mariadb.start()
        write_secret_file(Path(self.site.storage_conf), self.mariadb.storage_conf().encode())
        write_secret_file(Path(self.site.jwt_key), secrets.token_bytes(32))
        require_free_port(self.site.slurmdbd_port)
        self.teardown.push("slurmdbd", self.slurmdbd.stop)
        self.slurmdbd.start()
        self.sacctmgr("add", "cluster", self.cluster_name)
        self.sacctmgr("add", "account", SUITE_ACCOUNT, "fairshare=2", f"cluster={self.cluster_name}")
        self.sacctmgr("add", "user", ACCOUNT_USER, f"account={SUITE_ACCOUNT}", f"cluster={self.cluster_name}")

    def sacctmgr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(*self.install.command(["sacctmgr", "-i", *args]), env=self.env, check=check, timeout=60)

    def _dbd_answers(self) -> bool:
        return (
            run(
                *self.install.command(["sacctmgr", "-n", "show", "cluster"]), env=self.env, check=False
            ).returncode
            == 0
        )

    def start_restd(self) -> None:
        """slurmrestd as an unprivileged user, taking JWTs only (SLURM_JWT=daemon: it speaks
        to slurmctld with the caller's token, as Slurm's JWT guide sets it up)."""
        if self.restd is not None:
            return
        require_free_port(SLURMRESTD_PORT)
        restd_user = pwd.getpwnam(RESTD_USER)
        self.restd = Daemon(
            "slurmrestd",
            self.install.command(
                [
                    "slurmrestd",
                    "-u",
                    str(restd_user.pw_uid),
                    "-g",
                    str(restd_user.pw_gid),
                    "-a",
                    "rest_auth/jwt",
                    f"{CONTROLLER_IP}:{SLURMRESTD_PORT}",
                ]
            ),
            self.root / "log" / "slurmrestd.stdout",
            {**self.env, "SLURM_JWT": "daemon"},
            self._restd_answers,
        )
        self.teardown.push("slurmrestd", self.restd.stop)
        self.restd.start()

    def _restd_answers(self) -> bool:
        probe = run(
            "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"{REST_URL}/openapi/v3", check=False
        )
        return probe.stdout.strip() not in ("", "000")

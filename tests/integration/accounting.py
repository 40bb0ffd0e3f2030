"""Accounting of the session cluster, for real: MariaDB, slurmdbd with the rendered
slurmdbd.conf, the cluster and its accounts applied by the head's agent
(gpucluster.agents.accounts), and slurmrestd with JWT.

The suite's cluster is the example with `accounting:` on (`with_suite_accounting`) and the
REST API, so every real-Slurm test runs under AccountingStorageEnforce as a deployed
cluster with accounting does: root is in the root account Slurm makes for each cluster,
ACCOUNT_USER and the config's people (SUITE_PEOPLE) in SUITE_ACCOUNT, and OUTSIDER in none."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.agents import accounts
from gpucluster.agents.scontrol import CommandResult
from gpucluster.bootstrap import rest_api as rest_api_boot
from gpucluster.config import ClusterConfig
from gpucluster.resolved import resolve
from gpucluster.slurm.accounting import (
    AccountingSettings,
    AccountingSite,
    accounting_settings,
    accounts_state,
)
from gpucluster.slurm.rest_api import ADDRESS_VARIABLE
from gpucluster.slurm.site import SlurmSite
from tests.integration.accounting_daemons import (
    ACCOUNT_USER,
    SLURMRESTD_PORT,
    SUITE_ACCOUNT,
    SUITE_PEOPLE,
    Daemon,
    MariaDb,
    database_ca,
    write_secret_file,
)
from tests.integration.host import Teardown, require_free_port, run
from tests.integration.installs import SlurmInstall
from tests.integration.network import CONTROLLER_IP
from tests.integration.restd_unit import service_command

# A QOS whose limits no suite job reaches: the suite's account names it, the agent creates it.
SUITE_QOS = "suite"
REST_URL = f"http://{CONTROLLER_IP}:{SLURMRESTD_PORT}"
# slurmctld writes its associations' usage here when it stops and every 5 minutes
# (PERIODIC_CHECKPOINT); once the cluster is known, a start without it is fatal ("No Assoc
# usage file ... to recover").
ASSOC_USAGE = "assoc_usage"


def with_suite_accounting(cfg: ClusterConfig) -> ClusterConfig:
    """`cfg` with a database of its own, SUITE_ACCOUNT (ACCOUNT_USER in it) and SUITE_QOS, the
    REST API on the suite's port, and SUITE_PEOPLE as its users: (in SUITE_ACCOUNT)."""
    accounting = {
        "database": {},
        "qos": [{"name": SUITE_QOS, "max_gpus_per_user": 16}],
        "accounts": [
            {"name": SUITE_ACCOUNT, "users": [ACCOUNT_USER], "fairshare": 2, "qos": ["normal", SUITE_QOS]}
        ],
    }
    rest_api = {"port": SLURMRESTD_PORT}
    users = [{"name": name, "uid": uid, "account": SUITE_ACCOUNT} for name, uid in SUITE_PEOPLE.items()]
    return ClusterConfig.model_validate(
        {**cfg.model_dump(mode="json"), "accounting": accounting, "rest_api": rest_api, "users": users}
    )


def suite_settings(cfg: ClusterConfig, root: Path) -> AccountingSettings:
    """What the config renders (the REST API's JWT included), with TLS to the suite's
    database, whose CA is the suite's own."""
    settings = accounting_settings(resolve(cfg))
    assert settings is not None and settings.rest_api, "the suite's config has accounting and rest_api on"
    return dataclasses.replace(settings, tls_ca_file=str(database_ca(root)))


@dataclass
class SuiteAccounting:
    """Started before slurmctld (which registers with slurmdbd at start), stopped after it."""

    cfg: ClusterConfig
    root: Path
    site: AccountingSite
    # The whole site, whose rest_api part says where the unit puts slurmrestd.
    slurm_site: SlurmSite
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
        """The database, the secrets the head writes at boot, slurmdbd and the cluster, as the
        head's bootstrap registers it; slurmctld's files must be written already."""
        self.mariadb.start()
        write_secret_file(Path(self.site.storage_conf), self.mariadb.storage_conf().encode())
        write_secret_file(Path(self.site.jwt_key), secrets.token_bytes(32))
        require_free_port(self.site.slurmdbd_port)
        self.teardown.push("slurmdbd", self.slurmdbd.stop)
        self.slurmdbd.start()
        self.sacctmgr("add", "cluster", self.cfg.name)

    def apply_accounts(self) -> None:
        """The head's agent applies the config's accounts once slurmctld has registered."""
        assert self.apply(self.state), "a new database gets the cluster's account, user and QOS"

    @property
    def state(self) -> accounts.DesiredState:
        state = accounts_state(resolve(self.cfg))
        assert state is not None, "the suite's config has accounting on"
        return state

    def apply(self, state: accounts.DesiredState) -> bool:
        """The head's agent, run against this slurmdbd; whether it changed anything."""
        return accounts.apply(state, self.run_command)

    def run_command(self, argv: Sequence[str]) -> CommandResult:
        result = run(*self.install.command(argv), env=self.env, check=False, timeout=60)
        return CommandResult(tuple(argv), result.returncode, result.stdout, result.stderr)

    def sacctmgr(self, *args: str) -> None:
        run(*self.install.command(["sacctmgr", "-i", *args]), env=self.env, timeout=60)

    def sacctmgr_show(self, *args: str) -> list[str]:
        return run(
            *self.install.command(["sacctmgr", "-n", "-P", "show", *args]), env=self.env
        ).stdout.splitlines()

    def _dbd_answers(self) -> bool:
        return (
            run(
                *self.install.command(["sacctmgr", "-n", "show", "cluster"]), env=self.env, check=False
            ).returncode
            == 0
        )

    def start_restd(self) -> None:
        """slurmrestd from the unit the head installs (gpucluster.bootstrap.rest_api), with its
        ExecStart, environment (SLURM_JWT=daemon) and user read back from the rendered text,
        and the address file lib/rest_api.sh writes: the head's private address, here the
        controller's bridge address."""
        if self.restd is not None:
            return
        require_free_port(SLURMRESTD_PORT)
        (unit,) = rest_api_boot.head_files(resolve(self.cfg), self.slurm_site).values()
        Path(self.slurm_site.rest_api.address_file).write_text(f"{ADDRESS_VARIABLE}={CONTROLLER_IP}\n")
        command = service_command(unit)
        self.restd = Daemon(
            "slurmrestd",
            command.argv,
            self.root / "log" / "slurmrestd.stdout",
            command.env,
            self._restd_answers,
            uid=command.uid,
            gid=command.gid,
        )
        self.teardown.push("slurmrestd", self.restd.stop)
        self.restd.start()

    def _restd_answers(self) -> bool:
        probe = run(
            "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", f"{REST_URL}/openapi/v3", check=False
        )
        return probe.stdout.strip() not in ("", "000")

"""Slurm accounting and the REST API as the controller's files say them: slurmdbd.conf and
the slurm.conf lines that send job records to slurmdbd, track GPUs, enforce associations,
share fairly and accept JSON Web Tokens.

`AccountingSettings` is what these files need to know of the cluster's accounting; the
paths and ports where the daemons live are `SlurmSite`'s, as for the rest of Slurm's files.

The database's address, user and password are never rendered: slurmdbd.conf includes a
file the head writes at boot from the database's secret (`SlurmSite.slurmdbd_storage_conf`,
mode 600, owned by SlurmUser), so neither the bundle nor user data holds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpucluster import rds_ca
from gpucluster.agents.accounts import Account, DesiredState, Qos
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster

TEMPLATE = "slurm/slurmdbd.conf.j2"
# slurmdbd(8)'s and slurm.conf(5)'s default port for slurmdbd.
SLURMDBD_PORT = 6819
# Every generic resource the cluster schedules (GresTypes=gpu): sacct and sreport then count
# GPU time beside CPU time, memory, energy, nodes and billing, which Slurm tracks always.
TRACKED_TRES = ("gres/gpu",)
# associations: a job needs an account its user belongs to, else sbatch refuses it with
# Slurm's "Invalid account or account/partition combination specified"; limits and qos: an
# association's and a QOS's limits hold (and imply associations); safe: a job that could not
# finish within its association's GrpTRESMins is never started.
ENFORCE = ("associations", "limits", "qos", "safe")
# The accounting database slurmdbd creates and owns (StorageLoc).
DATABASE = "slurm_acct_db"
# RDS signs its servers' certificates with the CAs of this bundle (gpucluster.rds_ca, vendored
# and pinned); the head installs it from the bootstrap bundle and slurmdbd checks the database
# against it, which requires TLS (require_secure_transport).
RDS_CA_BUNDLE = rds_ca.INSTALLED_PATH
# JWT signing keys are HS256 secrets; Slurm's guide makes one of 32 random bytes.
JWT_KEY_BYTES = 32

_DB_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$")


# Where libmunge finds munged unless told otherwise (AuthInfo=socket=).
DEFAULT_MUNGE_SOCKET = "/run/munge/munge.socket.2"


@dataclass(frozen=True)
class AccountingSettings:
    """What the controller's files must know of accounting.

    dbd_host: the slurmdbd slurmctld sends records to; None is the head's own slurmdbd
        (the cluster has its database), else another cluster's shared one.
    database: slurmdbd's database on the server the storage file names.
    fair_share: accounts are set, so jobs are ordered by priority/multifactor with fair
        share rather than by submission.
    rest_api: slurmctld and slurmdbd accept JSON Web Tokens (auth/jwt beside munge), which
        slurmrestd's clients present.
    tls_ca_file: the CA bundle slurmdbd checks the database server's certificate against
        (TLS to the database); None: no TLS, only for a database on the same host.
    """

    dbd_host: str | None = None
    dbd_port: int = SLURMDBD_PORT
    database: str = DATABASE
    fair_share: bool = False
    rest_api: bool = False
    tls_ca_file: str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.dbd_port <= 65535:
            raise ValueError(f"AccountingSettings: port {self.dbd_port} is outside 1-65535")
        if self.dbd_host is not None and not _HOST.match(self.dbd_host):
            raise ValueError(f"AccountingSettings.dbd_host {self.dbd_host!r} is not a host name or address")
        if not _DB_NAME.match(self.database):
            raise ValueError(f"AccountingSettings.database {self.database!r} is not a plain database name")

    @property
    def runs_slurmdbd(self) -> bool:
        """The head runs slurmdbd itself (its own database), rather than using a shared one."""
        return self.dbd_host is None


@dataclass(frozen=True)
class AccountingSite:
    """Where accounting's daemons keep their files; defaults are production. A field of
    `SlurmSite` (`SlurmSite.accounting`), which the suite replaces with its own paths."""

    slurmdbd_port: int = SLURMDBD_PORT
    slurmdbd_pid_file: str = "/run/slurmdbd.pid"
    slurmdbd_log_file: str = "/var/log/slurm/slurmdbd.log"
    # Written at boot from the database's secret: StorageHost, StoragePort, StorageUser,
    # StoragePass. Beside slurmdbd.conf, mode 600, owned by SlurmUser.
    storage_conf: str = "/etc/slurm/slurmdbd-storage.conf"
    # Written at boot from its secret, mode 600, owned by SlurmUser; on the head's own disk,
    # not on the shared /home, which every node mounts.
    jwt_key: str = "/etc/slurm/jwt_hs256.key"
    # Follows ProctrackType: the cgroup gatherer reads the job's cgroup; a test host that
    # cannot run the cgroup plugins gathers from /proc.
    jobacct_gather_type: str = "jobacct_gather/cgroup"


def slurm_conf_lines(
    settings: AccountingSettings, site: AccountingSite, controller_addr: str, munge_socket: str
) -> list[str]:
    """The slurm.conf lines of accounting: where records go, what is tracked and enforced,
    how jobs are ordered (JWT is the REST API's, `jwt_lines`)."""
    lines = [
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={settings.dbd_host or controller_addr}",
        f"AccountingStoragePort={settings.dbd_port if settings.dbd_host else site.slurmdbd_port}",
        f"AccountingStorageTRES={','.join(TRACKED_TRES)}",
        f"AccountingStorageEnforce={','.join(ENFORCE)}",
        f"JobAcctGatherType={site.jobacct_gather_type}",
    ]
    if munge_socket != DEFAULT_MUNGE_SOCKET:
        # Slurm's clients sign what they send slurmdbd through the munged AccountingStoragePass
        # names, not AuthInfo's (slurm_protocol_api.c): without it, libmunge's default.
        lines.append(f"AccountingStoragePass=socket={munge_socket}")
    if settings.fair_share:
        lines += [
            "PriorityType=priority/multifactor",
            # Fair share decides; age breaks ties so no job waits for ever.
            "PriorityWeightFairshare=10000",
            "PriorityWeightAge=1000",
        ]
    return lines


def jwt_lines(rest_api: bool, site: AccountingSite) -> list[str]:
    """auth/jwt beside munge, in slurm.conf and slurmdbd.conf alike (Slurm's JWT guide)."""
    if not rest_api:
        return []
    return ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={site.jwt_key}"]


def render_slurmdbd_conf(
    settings: AccountingSettings, site: AccountingSite, dbd_host: str, slurm_user: str, auth_socket: str
) -> str:
    """slurmdbd.conf of the head's slurmdbd; `dbd_host` is the head's host name."""
    if not settings.runs_slurmdbd:
        raise ValueError("a cluster that uses another cluster's slurmdbd runs none of its own")
    storage_parameters = f"SSL_CA={settings.tls_ca_file}" if settings.tls_ca_file else ""
    return render(
        TEMPLATE,
        settings=settings,
        site=site,
        dbd_host=dbd_host,
        slurm_user=slurm_user,
        auth_socket=auth_socket,
        storage_parameters=storage_parameters,
        jwt_lines=jwt_lines(settings.rest_api, site),
    )


def accounting_settings(resolved: ResolvedCluster) -> AccountingSettings | None:
    """What the controller's files say of the config's `accounting:`; None without it. With
    `rest_api:` too, slurmdbd accepts the tokens slurmrestd passes on for its `slurmdb/` endpoints."""
    accounting = resolved.accounting
    if accounting is None:
        return None
    return AccountingSettings(
        dbd_host=accounting.external_host,
        dbd_port=accounting.slurmdbd_port,
        database=accounting.database.database_name if accounting.database is not None else DATABASE,
        fair_share=bool(accounting.accounts),
        tls_ca_file=RDS_CA_BUNDLE if accounting.database is not None else None,
        rest_api=resolved.rest_api is not None,
    )


def accounts_state(resolved: ResolvedCluster) -> DesiredState | None:
    """The accounts, users and QOS the head applies with sacctmgr (gpucluster.agents.accounts)."""
    accounting = resolved.accounting
    if accounting is None:
        return None
    return DesiredState(
        cluster=resolved.name,
        qos=tuple(
            Qos(
                name=qos.name,
                priority=qos.priority,
                max_wall_minutes=qos.max_wall,
                max_gpus_per_user=qos.max_gpus_per_user,
                max_gpus_per_job=qos.max_gpus_per_job,
                max_jobs_per_user=qos.max_jobs_per_user,
            )
            for qos in accounting.qos
        ),
        accounts=tuple(
            Account(
                name=account.name,
                fairshare=account.fairshare,
                qos=tuple(account.qos) or (accounting.default_qos[account.name],),
                default_qos=accounting.default_qos[account.name],
                users=tuple(account.users),
            )
            for account in accounting.accounts
        ),
        default_accounts=dict(accounting.default_accounts),
    )

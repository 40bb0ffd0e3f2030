"""Slurm accounting resolved: where slurmdbd runs, the database the Storage stack creates and the
names the head reads it by, and the accounts and QOS the head applies with sacctmgr."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gpucluster import names
from gpucluster.config import ClusterConfig
from gpucluster.config.accounting import AccountConfig, QosConfig
from gpucluster.config.accounting_database import DatabaseConfig, second_zone
from gpucluster.config.users import UserConfig

# RDS for MariaDB's port, and the release the instance runs: 10.11, the major release of
# Debian 12's MariaDB that the real-Slurm suite runs slurmdbd against (the newest 10.11 that
# cfn-lint knows; RDS applies later minor releases itself) and its parameter-group family.
DATABASE_PORT = 3306
DATABASE_ENGINE = "mariadb"
DATABASE_ENGINE_VERSION = "10.11.19"
DATABASE_PARAMETER_FAMILY = "mariadb10.11"


@dataclass(frozen=True)
class ResolvedDatabase:
    """The RDS for MariaDB instance of `accounting.database`."""

    instance_class: str
    storage_gib: int
    backup_retention_days: int
    # Name formats (gpucluster.names); the Storage stack appends its per-stack suffix.
    identifier_prefix: str
    secret_name_prefix: str
    secret_name_pattern: str
    # slurmdbd's StorageUser and StorageLoc.
    user: str
    database_name: str
    port: int
    engine: str
    engine_version: str
    parameter_family: str
    # The zone the instance runs in (the cluster's), and the subnet group's second zone: a
    # created VPC's spare subnet (None with an existing VPC, whose two subnets are listed).
    availability_zone: str
    second_availability_zone: str | None
    existing_subnet_ids: tuple[str, ...] | None
    # The SSM parameters (under the storage facts' path) the Storage stack writes and the head reads.
    host_parameter: str
    port_parameter: str
    secret_arn_parameter: str


@dataclass(frozen=True)
class ResolvedAccounting:
    # The database the cluster creates, with slurmdbd on its head; None: an external slurmdbd.
    database: ResolvedDatabase | None
    # slurm.conf's AccountingStorageHost when slurmdbd is elsewhere (None: the head's own), and
    # AccountingStoragePort either way.
    external_host: str | None
    slurmdbd_port: int
    accounts: tuple[AccountConfig, ...]
    qos: tuple[QosConfig, ...]
    # account name -> its default QOS (the account's default_qos, else the first of its qos,
    # else Slurm's `normal`); user -> default account (the user's `account`, else the first account
    # that lists the user).
    default_qos: Mapping[str, str]
    default_accounts: Mapping[str, str]
    # The munge key's secret when the cluster shares one with other clusters (every node reads
    # it); None: the key the Storage stack generates.
    munge_key_secret_arn: str | None = None

    @property
    def users(self) -> tuple[str, ...]:
        return tuple(self.default_accounts)


def resolve_accounting(cfg: ClusterConfig) -> ResolvedAccounting | None:
    accounting = cfg.accounting
    if accounting is None:
        return None
    return ResolvedAccounting(
        database=None if accounting.database is None else _database(cfg, accounting.database),
        external_host=accounting.external_host,
        slurmdbd_port=accounting.external_port,
        accounts=_with_members(accounting.accounts, cfg.users),
        qos=tuple(accounting.qos),
        default_qos=MappingProxyType(
            {account.name: account.resolved_default_qos for account in accounting.accounts}
        ),
        default_accounts=MappingProxyType(
            accounting.default_accounts() | {user.name: user.account for user in cfg.users if user.account}
        ),
        munge_key_secret_arn=accounting.munge_key_secret,
    )


def _with_members(accounts: list[AccountConfig], users: list[UserConfig]) -> tuple[AccountConfig, ...]:
    """The accounts with each user whose `account` names one among its members."""
    return tuple(
        account.model_copy(
            update={
                "users": [
                    *account.users,
                    *(u.name for u in users if u.account == account.name and u.name not in account.users),
                ]
            }
        )
        for account in accounts
    )


def _database(cfg: ClusterConfig, database: DatabaseConfig) -> ResolvedDatabase:
    existing = database.subnet_ids
    return ResolvedDatabase(
        instance_class=database.instance_class,
        storage_gib=database.storage_gib,
        backup_retention_days=database.backup_retention_days,
        identifier_prefix=names.accounting_db_identifier_prefix(cfg),
        secret_name_prefix=names.accounting_db_secret_name_prefix(cfg),
        secret_name_pattern=names.accounting_db_secret_name_pattern(cfg),
        user=names.ACCOUNTING_DB_USER,
        database_name=names.ACCOUNTING_DB_NAME,
        port=DATABASE_PORT,
        engine=DATABASE_ENGINE,
        engine_version=DATABASE_ENGINE_VERSION,
        parameter_family=DATABASE_PARAMETER_FAMILY,
        availability_zone=cfg.availability_zone,
        second_availability_zone=None
        if existing is not None
        else second_zone(cfg.region, cfg.availability_zone, database.second_availability_zone),
        existing_subnet_ids=None if existing is None else tuple(existing),
        host_parameter=names.storage_parameter(cfg, "accounting_db_host"),
        port_parameter=names.storage_parameter(cfg, "accounting_db_port"),
        secret_arn_parameter=names.storage_parameter(cfg, "accounting_db_secret_arn"),
    )

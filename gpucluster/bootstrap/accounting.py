"""What the head's bootstrap needs for Slurm accounting (lib/accounting.sh): where slurmdbd's
files go, the SSM parameters that name its database and the database's secret, and the
accounts the head applies with the accounts agent after slurmctld registered."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpucluster import rds_ca
from gpucluster.resolved import ResolvedCluster
from gpucluster.resolved.node_layout import AGENTS_TREE
from gpucluster.slurm import accounting
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite

# The desired accounts (gpucluster.agents.accounts' JSON), a bundle file the agent reads in place.
ACCOUNTS_STATE = "conf/accounts.json"
AGENT = "gpucluster.agents.accounts"


@dataclass(frozen=True)
class AccountingBoot:
    """Empty strings and False where the cluster has no accounting, or no slurmdbd of its own."""

    enabled: bool
    runs_slurmdbd: bool
    slurmdbd_conf: str
    storage_conf: str
    db_host_parameter: str
    db_port_parameter: str
    db_secret_parameter: str
    # slurmctld's association usage file: the head restarts a fresh slurmctld once so it exists.
    assoc_usage: str
    accounts_state: str
    # The agent's module, run in the bundle's agents tree (NodeLayout's AGENTS_TREE).
    agent: str
    agents_tree: str
    # The CA bundle slurmdbd checks the database's certificate against, the bundle file it is
    # installed from and that file's pinned sha256 (gpucluster.rds_ca), which the head checks.
    database_ca: str
    database_ca_source: str
    database_ca_sha256: str


def accounting_boot(resolved: ResolvedCluster, site: SlurmSite) -> AccountingBoot:
    settings = accounting.accounting_settings(resolved)
    database = resolved.accounting.database if resolved.accounting is not None else None
    return AccountingBoot(
        enabled=settings is not None,
        runs_slurmdbd=settings is not None and settings.runs_slurmdbd,
        slurmdbd_conf=slurm_conf.slurmdbd_conf_path(site),
        storage_conf=site.accounting.storage_conf,
        db_host_parameter=database.host_parameter if database is not None else "",
        db_port_parameter=database.port_parameter if database is not None else "",
        db_secret_parameter=database.secret_arn_parameter if database is not None else "",
        assoc_usage=f"{site.state_save_location}/assoc_usage",
        accounts_state=ACCOUNTS_STATE,
        agent=AGENT,
        agents_tree=AGENTS_TREE,
        database_ca=(settings.tls_ca_file or "") if settings is not None else "",
        database_ca_source=rds_ca.BUNDLE_PATH,
        database_ca_sha256=rds_ca.RDS_CA_BUNDLE_SHA256,
    )


def database_ca_file(resolved: ResolvedCluster) -> dict[str, str]:
    """The bundle's copy of RDS's CA bundle, when the cluster has a database of its own."""
    settings = accounting.accounting_settings(resolved)
    if settings is None or not settings.tls_ca_file:
        return {}
    return {rds_ca.BUNDLE_PATH: rds_ca.bundle_text()}


def accounts_file(resolved: ResolvedCluster) -> dict[str, str]:
    """The bundle's accounts file, when the cluster has accounting."""
    state = accounting.accounts_state(resolved)
    if state is None:
        return {}
    return {ACCOUNTS_STATE: json.dumps(state.to_json(), indent=2, sort_keys=True) + "\n"}

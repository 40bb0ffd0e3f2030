"""Accounting in the controller's files (gpucluster.slurm.accounting): slurm.conf's lines and
slurmdbd.conf, which never holds the database's address, user or password. The real-Slurm
suite runs them (tests/integration/test_accounting.py, test_rest_api.py)."""

from __future__ import annotations

import pytest

from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.accounting import (
    AccountingSettings,
    AccountingSite,
    accounting_settings,
    accounts_state,
)
from gpucluster.slurm.conf import SlurmSite
from tests.config.test_accounting import SHARED_MUNGE
from tests.conftest import REPO
from tests.slurm.conf_text import settings, single

ACCOUNTING_KEYS = (
    "AccountingStorageType",
    "AccountingStorageHost",
    "AccountingStorageTRES",
    "AccountingStorageEnforce",
    "JobAcctGatherType",
    "PriorityType",
)
# The REST API's (rest_api), with or without accounting.
JWT_KEYS = ("AuthAltTypes", "AuthAltParameters")


def test_only_a_config_with_accounting_renders_it(example):
    files = slurm_conf.render_slurm_files(resolve(example))
    conf = settings(files.slurm_conf)
    accounting_on = example.accounting is not None
    assert bool([key for key in ACCOUNTING_KEYS if key in conf]) == accounting_on
    assert (files.slurmdbd_conf is not None) == accounting_on
    assert any(path.endswith("slurmdbd.conf") for path in files.by_path(SlurmSite())) == accounting_on
    assert [key for key in JWT_KEYS if key in conf] == (list(JWT_KEYS) if example.rest_api else [])


def test_records_go_to_the_heads_slurmdbd_with_gpus_tracked_and_associations_enforced(example):
    files = slurm_conf.render_slurm_files(resolve(example), accounting_settings=AccountingSettings())
    conf = settings(files.slurm_conf)
    assert single(conf, "AccountingStorageType") == "accounting_storage/slurmdbd"
    assert single(conf, "AccountingStorageHost") == slurm_conf.controller_addr(resolve(example))
    assert single(conf, "AccountingStoragePort") == "6819"
    assert "gres/gpu" in single(conf, "AccountingStorageTRES").split(",")
    assert {"associations", "limits", "qos"} <= set(single(conf, "AccountingStorageEnforce").split(","))
    assert single(conf, "JobAcctGatherType") == "jobacct_gather/cgroup"
    assert "PriorityType" not in conf, "no accounts: jobs keep Slurm's default order"
    assert ("AuthAltTypes" in conf) == (example.rest_api is not None), "JWT is the REST API's"
    assert files.by_path(SlurmSite())["/etc/slurm/slurmdbd.conf"] == files.slurmdbd_conf


def test_a_munged_off_libmunges_default_socket_signs_what_goes_to_slurmdbd_too(example):
    """Clients sign slurmdbd's messages through AccountingStoragePass's munged, not AuthInfo's."""
    resolved, on = resolve(example), AccountingSettings()
    production = settings(slurm_conf.render_slurm_files(resolved, accounting_settings=on).slurm_conf)
    assert "AccountingStoragePass" not in production, "libmunge's default needs no second name"
    site = SlurmSite(munge_socket="/tmp/run/munge/munge.socket.2")
    conf = settings(slurm_conf.render_slurm_files(resolved, site, accounting_settings=on).slurm_conf)
    assert single(conf, "AuthInfo") == "socket=/tmp/run/munge/munge.socket.2"
    assert single(conf, "AccountingStoragePass") == "socket=/tmp/run/munge/munge.socket.2"


def test_fair_share_when_accounts_are_set(example):
    text = slurm_conf.render_slurm_files(
        resolve(example), accounting_settings=AccountingSettings(fair_share=True)
    ).slurm_conf
    conf = settings(text)
    assert single(conf, "PriorityType") == "priority/multifactor"
    assert int(single(conf, "PriorityWeightFairshare")) > 0


def test_the_rest_api_adds_jwt_beside_munge_in_both_daemons(example):
    files = slurm_conf.render_slurm_files(
        resolve(example), accounting_settings=AccountingSettings(rest_api=True)
    )
    assert files.slurmdbd_conf is not None
    for text in (files.slurm_conf, files.slurmdbd_conf):
        conf = settings(text)
        assert single(conf, "AuthType") == "auth/munge"
        assert single(conf, "AuthAltTypes") == "auth/jwt"
        assert single(conf, "AuthAltParameters") == "jwt_key=/etc/slurm/jwt_hs256.key"


def test_slurmdbd_conf_includes_the_storage_file_the_head_writes_and_holds_no_credential(example):
    files = slurm_conf.render_slurm_files(
        resolve(example), accounting_settings=AccountingSettings(tls_ca_file="/etc/ssl/certs/rds.pem")
    )
    assert files.slurmdbd_conf is not None
    conf = settings(files.slurmdbd_conf)
    for credential in ("StorageHost", "StoragePort", "StorageUser", "StoragePass", "StoragePassScript"):
        assert credential not in conf, f"{credential} is written at boot from the secret, never rendered"
    assert "Include /etc/slurm/slurmdbd-storage.conf" in files.slurmdbd_conf.splitlines()
    assert single(conf, "StorageType") == "accounting_storage/mysql"
    assert single(conf, "StorageLoc") == "slurm_acct_db"
    assert single(conf, "StorageParameters") == "SSL_CA=/etc/ssl/certs/rds.pem"
    assert single(conf, "DbdHost") == slurm_conf.controller_hostname(resolve(example))
    assert single(conf, "SlurmUser") == "slurm"


def test_another_clusters_slurmdbd_takes_the_records_and_the_head_runs_none(example):
    shared = AccountingSettings(dbd_host="slurmdbd.shared.example", dbd_port=7031)
    files = slurm_conf.render_slurm_files(resolve(example), accounting_settings=shared)
    conf = settings(files.slurm_conf)
    assert single(conf, "AccountingStorageHost") == "slurmdbd.shared.example"
    assert single(conf, "AccountingStoragePort") == "7031"
    assert files.slurmdbd_conf is None


def test_the_site_places_the_daemons_files(example):
    site = SlurmSite(
        accounting=AccountingSite(
            slurmdbd_port=16819, jwt_key="/t/jwt.key", jobacct_gather_type="jobacct_gather/linux"
        )
    )
    files = slurm_conf.render_slurm_files(resolve(example), site, AccountingSettings(rest_api=True))
    conf = settings(files.slurm_conf)
    assert single(conf, "AccountingStoragePort") == "16819"
    assert single(conf, "AuthAltParameters") == "jwt_key=/t/jwt.key"
    assert single(conf, "JobAcctGatherType") == "jobacct_gather/linux"
    assert files.slurmdbd_conf is not None
    assert single(settings(files.slurmdbd_conf), "DbdPort") == "16819"


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("dbd_port", 0, "outside 1-65535"),
        ("dbd_host", "bad host", "not a host name"),
        ("database", "acct;drop", "not a plain database name"),
    ],
)
def test_bad_settings_are_refused(field, value, message):
    with pytest.raises(ValueError, match=message):
        AccountingSettings(**{field: value})


def test_the_configs_accounting_maps_to_the_files_and_the_agents_state():
    """examples/mixed.yaml: a database of its own, two accounts sharing a user, two QOS, and
    the REST API, whose tokens slurmdbd accepts too."""
    resolved = resolve(load_config(REPO / "examples" / "mixed.yaml"))
    assert accounting_settings(resolved) == AccountingSettings(
        fair_share=True, tls_ca_file="/etc/slurm/rds-global-bundle.pem", rest_api=True
    )
    state = accounts_state(resolved)
    assert state is not None and state.cluster == resolved.name
    assert [(qos.name, qos.max_wall_minutes, qos.max_gpus_per_user) for qos in state.qos] == [
        ("train", 7 * 24 * 60, 64),
        ("dev", 8 * 60, 8),
    ]
    research, product = state.accounts
    assert (research.fairshare, research.qos, research.default_qos) == (3, ("train", "dev"), "dev")
    assert product.users == ("carol", "alice")
    assert state.default_accounts == {"alice": "research", "bob": "research", "carol": "product"}


def test_an_external_slurmdbd_is_where_records_go(example):
    raw = {
        **example.model_dump(mode="json"),
        "accounting": {
            "external": "dbd.shared.example:7031",
            # The secret lies in the cluster's region (validate refuses another).
            "munge_key_secret": SHARED_MUNGE.replace("us-east-2", example.region),
        },
    }
    resolved = resolve(ClusterConfig.model_validate(raw))
    assert accounting_settings(resolved) == AccountingSettings(
        dbd_host="dbd.shared.example", dbd_port=7031, rest_api=example.rest_api is not None
    )


def test_no_accounting_no_settings(example):
    assert (accounting_settings(resolve(example)) is None) == (example.accounting is None)
    assert (accounts_state(resolve(example)) is None) == (example.accounting is None)

"""`accounting:`: the database or an external slurmdbd, accounts, users and QOS; each mistake
is one line naming its field (exit 2 through `gpucluster validate`, tests/config/test_validation.py)."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config.loader import parse_config
from gpucluster.resolved import resolve
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
EXISTING_VPC = {"vpc_id": "vpc-0abc1234def567890", "subnet_id": "subnet-0abc1234def567890"}
DB_SUBNETS = ["subnet-0aaaa1111bbbb2222", "subnet-0cccc3333dddd4444"]
SHARED_MUNGE = "arn:aws:secretsmanager:us-east-2:123456789012:secret:shared/munge-key-AbCdEf"


def with_accounting(accounting: dict, **top: object) -> dict:
    data = copy.deepcopy(DEFAULT)
    data["accounting"] = accounting
    data.update(top)
    return data


def problems(data: dict) -> list[str]:
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


def parsed(data: dict):
    return parse_config(yaml.safe_dump(data), "c.yaml")


TEAMS = {
    "database": {},
    "qos": [
        {"name": "short", "max_wall": "04:00:00", "priority": 100},
        {"name": "long", "max_wall": "7-00:00", "max_gpus_per_user": 32, "max_gpus_per_job": 16},
    ],
    "accounts": [
        {"name": "team-a", "users": ["alice", "bob"], "fairshare": 2, "qos": ["long", "short"]},
        {"name": "team_b", "users": ["carol", "alice"], "qos": ["short", "normal"], "default_qos": "normal"},
        {"name": "ops"},
    ],
}


def test_off_by_default():
    assert parsed(copy.deepcopy(DEFAULT)).accounting is None
    assert resolve(parsed(copy.deepcopy(DEFAULT))).accounting is None


def test_a_team_setup_is_valid_and_resolved():
    cluster = resolve(parsed(with_accounting(TEAMS)))
    accounting = cluster.accounting
    assert accounting is not None and accounting.database is not None
    assert [qos.max_wall for qos in accounting.qos] == [240, 7 * 24 * 60]
    # A user may be in several accounts; the first account listing them is their default.
    assert dict(accounting.default_accounts) == {"alice": "team-a", "bob": "team-a", "carol": "team_b"}
    assert dict(accounting.default_qos) == {"team-a": "long", "team_b": "normal", "ops": "normal"}
    assert accounting.external_host is None and accounting.slurmdbd_port == 6819
    database = accounting.database
    assert database.instance_class == "db.t4g.small"
    assert database.storage_gib == 20
    assert database.availability_zone == "us-east-2a"
    assert database.second_availability_zone == "us-east-2b"
    assert database.existing_subnet_ids is None
    assert database.host_parameter == "/gpucluster/demo/storage/accounting_db_host"
    assert database.secret_arn_parameter in cluster.names.storage_parameters.values()
    assert database.secret_name_pattern == "gpucluster/demo/accounting-db-????????????-??????"
    assert database.identifier_prefix == "gpucluster-demo-accounting-"
    assert (database.user, database.database_name, database.port) == ("slurm", "slurm_acct_db", 3306)


def test_external_slurmdbd_creates_no_database():
    shared = {"munge_key_secret": SHARED_MUNGE}
    accounting = resolve(
        parsed(with_accounting({"external": "dbd.shared.internal:7031", **shared}))
    ).accounting
    assert accounting is not None and accounting.database is None
    assert (accounting.external_host, accounting.slurmdbd_port) == ("dbd.shared.internal", 7031)
    default_port = resolve(parsed(with_accounting({"external": "10.0.3.7", **shared}))).accounting
    assert default_port is not None and default_port.slurmdbd_port == 6819


def database_of(data: dict):
    accounting = resolve(parsed(data)).accounting
    assert accounting is not None and accounting.database is not None
    return accounting.database


def test_second_zone_skips_the_clusters_own():
    moved = with_accounting({"database": {}}, availability_zone="us-east-2b")
    assert database_of(moved).second_availability_zone == "us-east-2a"
    chosen = with_accounting({"database": {"second_availability_zone": "us-east-2c"}})
    assert database_of(chosen).second_availability_zone == "us-east-2c"


def test_existing_vpc_takes_its_two_subnets():
    data = with_accounting({"database": {"subnet_ids": DB_SUBNETS}}, network=EXISTING_VPC)
    database = database_of(data)
    assert database.existing_subnet_ids == tuple(DB_SUBNETS)
    assert database.second_availability_zone is None


def teams(change) -> dict:
    accounting = copy.deepcopy(TEAMS)
    change(accounting)
    return with_accounting(accounting)


def account(index: int, **values):
    return lambda a: a["accounts"][index].update(values)


def qos(index: int, **values):
    return lambda a: a["qos"][index].update(values)


REFUSED = {
    "neither-database-nor-external": (with_accounting({}), "accounting.database"),
    "both-database-and-external": (
        with_accounting({"database": {}, "external": "dbd:6819"}),
        "accounting.database",
    ),
    "external-not-host-port": (with_accounting({"external": "dbd:port"}), "accounting.external"),
    "external-port-zero": (with_accounting({"external": "dbd.internal:0"}), "accounting.external"),
    "external-without-the-shared-munge-key": (
        with_accounting({"external": "dbd.internal:6819"}),
        "accounting.munge_key_secret",
    ),
    "unknown-qos": (teams(account(0, qos=["long", "huge"])), "accounting.accounts.0.qos"),
    "default-qos-not-listed": (teams(account(0, default_qos="normal")), "accounting.accounts.0.default_qos"),
    "user-twice-in-one-account": (teams(account(1, users=["carol", "carol"])), "accounting.accounts.1.users"),
    "qos-twice-in-one-account": (teams(account(1, qos=["short", "short"])), "accounting.accounts.1.qos"),
    "duplicate-account": (teams(account(2, name="team-a")), "accounting.accounts"),
    "duplicate-qos": (teams(qos(1, name="short")), "accounting.qos"),
    "account-named-root": (teams(account(2, name="root")), "accounting.accounts.2.name"),
    "account-upper-case": (teams(account(2, name="Ops")), "accounting.accounts.2.name"),
    "account-with-comma": (teams(account(2, name="ops,dev")), "accounting.accounts.2.name"),
    "qos-starting-with-digit": (teams(qos(0, name="1short")), "accounting.qos.0.name"),
    "bad-user-name": (teams(account(0, users=["alice", "Bob Smith"])), "accounting.accounts.0.users.1"),
    "fairshare-zero": (teams(account(0, fairshare=0)), "accounting.accounts.0.fairshare"),
    "fairshare-text": (teams(account(0, fairshare="2")), "accounting.accounts.0.fairshare"),
    "gpus-per-user-zero": (teams(qos(0, max_gpus_per_user=0)), "accounting.qos.0.max_gpus_per_user"),
    "job-larger-than-user": (
        teams(qos(1, max_gpus_per_job=64)),
        "accounting.qos.1.max_gpus_per_job",
    ),
    "max-wall-not-slurm": (teams(qos(0, max_wall="4 hours")), "accounting.qos.0.max_wall"),
    "max-wall-zero": (teams(qos(0, max_wall=0)), "accounting.qos.0.max_wall"),
    "negative-priority": (teams(qos(0, priority=-1)), "accounting.qos.0.priority"),
    "unknown-qos-limit": (teams(qos(0, max_cpus=4)), "accounting.qos.0.max_cpus"),
    "storage-below-gp3-minimum": (
        with_accounting({"database": {"storage_gib": 10}}),
        "accounting.database.storage_gib",
    ),
    "bad-instance-class": (
        with_accounting({"database": {"instance_class": "t4g.small"}}),
        "accounting.database.instance_class",
    ),
    "existing-vpc-without-db-subnets": (
        with_accounting({"database": {}}, network=EXISTING_VPC),
        "accounting.database.subnet_ids",
    ),
    "db-subnets-with-created-vpc": (
        with_accounting({"database": {"subnet_ids": DB_SUBNETS}}),
        "accounting.database.subnet_ids",
    ),
    "one-db-subnet": (
        with_accounting({"database": {"subnet_ids": ["subnet-0aaaa1111bbbb2222"]}}, network=EXISTING_VPC),
        "accounting.database.subnet_ids",
    ),
    "second-zone-is-the-clusters": (
        with_accounting({"database": {"second_availability_zone": "us-east-2a"}}),
        "accounting.database.second_availability_zone",
    ),
    "second-zone-in-another-region": (
        with_accounting({"database": {"second_availability_zone": "us-west-2b"}}),
        "accounting.database.second_availability_zone",
    ),
    "cluster-name-rds-refuses": (with_accounting({"database": {}}, name="a--b"), "name"),
    "munge-secret-by-name": (
        with_accounting({"external": "dbd:6819", "munge_key_secret": "shared/munge-key"}),
        "accounting.munge_key_secret",
    ),
    "munge-secret-partial-arn": (
        with_accounting({"external": "dbd:6819", "munge_key_secret": SHARED_MUNGE.removesuffix("-AbCdEf")}),
        "accounting.munge_key_secret",
    ),
    "munge-secret-of-another-service": (
        with_accounting(
            {"external": "dbd:6819", "munge_key_secret": SHARED_MUNGE.replace("secretsmanager", "ssm")}
        ),
        "accounting.munge_key_secret",
    ),
    "munge-secret-in-another-region": (
        with_accounting(
            {"external": "dbd:6819", "munge_key_secret": SHARED_MUNGE.replace("us-east-2", "us-west-2")}
        ),
        "accounting.munge_key_secret",
    ),
    "munge-secret-in-another-partition": (
        with_accounting(
            {"external": "dbd:6819", "munge_key_secret": SHARED_MUNGE.replace("arn:aws:", "arn:aws-cn:")}
        ),
        "accounting.munge_key_secret",
    ),
    # A region newer than the vendored RDS CA bundle (gpucluster.rds_ca): slurmdbd could not
    # check the database's certificate.
    "region-the-ca-bundle-does-not-cover": (
        with_accounting({"database": {}}, region="ap-east-2", availability_zone="ap-east-2a"),
        "accounting.database",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_each_mistake_is_one_line_naming_its_field(case):
    data, field = REFUSED[case]
    found = problems(data)
    assert len(found) == 1, found
    assert found[0].startswith(f"{field}: "), found


@pytest.mark.parametrize("source", [{"external": "dbd:6819"}, {"database": {}}])
def test_a_shared_munge_key_secret_is_resolved_for_either_side(source):
    resolved = resolve(parsed(with_accounting({**source, "munge_key_secret": SHARED_MUNGE})))
    assert resolved.accounting is not None
    assert resolved.accounting.munge_key_secret_arn == SHARED_MUNGE


def test_the_wrong_region_is_named_with_how_to_fix_it():
    (line,) = problems(
        with_accounting(
            {"external": "dbd:6819", "munge_key_secret": SHARED_MUNGE.replace("us-east-2", "us-west-2")}
        )
    )
    assert "us-west-2" in line and "replicate-secret-to-regions" in line


def test_a_cluster_name_with_two_hyphens_is_fine_without_a_database():
    external = {"external": "dbd:6819", "munge_key_secret": SHARED_MUNGE}
    assert problems(with_accounting(external, name="a--b")) == []

"""`gpucluster preflight` on a config with accounting.database: the subnet group's two zones,
the instance class RDS sells in the cluster's zone, and the RDS quotas (moto for EC2, a
Stubber for RDS)."""

from __future__ import annotations

from pathlib import Path

import boto3
import yaml

from gpucluster.resolved.accounting import DATABASE_ENGINE, DATABASE_ENGINE_VERSION
from tests.aws.preflight_aws import EXAMPLE, REGION, Aws, account_ready, aws, rows, run
from tests.config.test_accounting import SHARED_MUNGE

__all__ = ["aws"]  # the fixture, imported to replace the StubbedAws one of conftest

ZONES = "accounting database zones"
ORDERABLE = "db.t4g.small for mariadb"


def config(tmp_path: Path, accounting: dict, **top: object) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["accounting"] = accounting
    data.update(top)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def ready(aws: Aws) -> None:
    """Everything but the database passes (the example's reservation and vCPU quota)."""
    account_ready()
    aws.reservation()
    aws.quota()


def orderable(aws: Aws, zones: tuple[str, ...] = ("us-east-2a", "us-east-2b")) -> None:
    aws.rds_stub.add_response(
        "describe_orderable_db_instance_options",
        {
            "OrderableDBInstanceOptions": [
                {
                    "Engine": DATABASE_ENGINE,
                    "EngineVersion": DATABASE_ENGINE_VERSION,
                    "DBInstanceClass": "db.t4g.small",
                    "AvailabilityZones": [{"Name": zone} for zone in zones],
                }
            ]
        },
        {
            "Engine": DATABASE_ENGINE,
            "EngineVersion": DATABASE_ENGINE_VERSION,
            "DBInstanceClass": "db.t4g.small",
        },
    )


def rds_quotas(aws: Aws, instances_used: int = 3) -> None:
    quotas = [
        {"AccountQuotaName": "DBInstances", "Used": instances_used, "Max": 40},
        {"AccountQuotaName": "DBSubnetGroups", "Used": 2, "Max": 50},
        {"AccountQuotaName": "DBParameterGroups", "Used": 1, "Max": 50},
        {"AccountQuotaName": "AllocatedStorage", "Used": 100, "Max": 100000},
    ]
    aws.rds_stub.add_response("describe_account_attributes", {"AccountQuotas": quotas}, {})


def test_a_ready_account_passes_every_database_row(aws: Aws, tmp_path: Path) -> None:
    ready(aws)
    orderable(aws)
    rds_quotas(aws)
    result = run(config(tmp_path, {"database": {}}))
    assert result.exit_code == 0, result.output
    table = rows(result.stdout)
    database_rows = {k: v for k, v in table.items() if "accounting" in k or "RDS" in k or "mariadb" in k}
    assert set(database_rows) == {
        ZONES,
        ORDERABLE,
        "quota RDS DBInstances",
        "quota RDS DBSubnetGroups",
        "quota RDS DBParameterGroups",
    }
    assert all(row.startswith("pass") for row in database_rows.values())
    assert "us-east-2a (the database) and us-east-2b (spare)" in table[ZONES]
    assert "3 of 40 used" in table["quota RDS DBInstances"]


def test_each_database_failure_names_its_fix(aws: Aws, tmp_path: Path) -> None:
    ready(aws)
    orderable(aws, zones=("us-east-2b", "us-east-2c"))
    rds_quotas(aws, instances_used=40)
    result = run(config(tmp_path, {"database": {"second_availability_zone": "us-east-2z"}}))
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    flat = {key: " ".join(value.split()) for key, value in table.items()}
    assert flat[ZONES].startswith("FAIL")
    assert "us-east-2z is not an available zone" in flat[ZONES]
    assert "second_availability_zone to one of: us-east-2b, us-east-2c" in flat[ZONES]
    assert flat[ORDERABLE].startswith("FAIL") and "instance_class" in flat[ORDERABLE]
    assert flat["quota RDS DBInstances"].startswith("FAIL")
    assert "40 of 40 used" in flat["quota RDS DBInstances"]
    assert flat["quota RDS DBSubnetGroups"].startswith("pass")


def existing_vpc(zones: tuple[str, str]) -> tuple[dict, list[str]]:
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.90.0.0/16")["Vpc"]["VpcId"]
    nodes = ec2.create_subnet(VpcId=vpc, CidrBlock="10.90.128.0/17", AvailabilityZone="us-east-2a")
    listed = [
        ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.90.{i}.0/24", AvailabilityZone=zone)["Subnet"]["SubnetId"]
        for i, zone in enumerate(zones)
    ]
    return {"vpc_id": vpc, "subnet_id": nodes["Subnet"]["SubnetId"]}, listed


def test_listed_subnets_must_span_two_zones_one_the_clusters(aws: Aws, tmp_path: Path) -> None:
    ready(aws)
    orderable(aws)
    rds_quotas(aws)
    network, listed = existing_vpc(("us-east-2a", "us-east-2a"))
    result = run(config(tmp_path, {"database": {"subnet_ids": listed}}, network=network))
    assert result.exit_code == 1, result.output
    row = " ".join(rows(result.stdout)["accounting database subnets"].split())
    assert row.startswith("FAIL") and "need two zones, one of them us-east-2a" in row


def test_listed_subnets_in_two_zones_pass(aws: Aws, tmp_path: Path) -> None:
    ready(aws)
    orderable(aws)
    rds_quotas(aws)
    network, listed = existing_vpc(("us-east-2b", "us-east-2a"))
    result = run(config(tmp_path, {"database": {"subnet_ids": listed}}, network=network))
    row = rows(result.stdout)["accounting database subnets"]
    assert row.startswith("pass"), result.output


def test_an_external_slurmdbd_needs_nothing_of_rds(aws: Aws, tmp_path: Path) -> None:
    ready(aws)
    result = run(config(tmp_path, {"external": "dbd.shared.internal:6819", "munge_key_secret": SHARED_MUNGE}))
    assert result.exit_code == 0, result.output
    row = " ".join(rows(result.stdout)["accounting database"].split())
    assert row.startswith("pass") and "dbd.shared.internal:6819" in row

"""`accounting.database:`: the RDS for MariaDB instance the Storage stack creates for slurmdbd,
and where it can sit in the cluster's network (an RDS subnet group spans two zones; the
cluster lives in one)."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from gpucluster import rds_ca
from gpucluster.config.fields import StrictModel, SubnetId, fail

# The cheapest RDS for MariaDB instance that carries a cluster's slurmdbd (README: Accounting;
# its 2 GiB hold a buffer pool below Slurm's 4 GiB advice, which slurmdbd logs), and gp3's
# smallest volume for MariaDB.
DEFAULT_INSTANCE_CLASS = "db.t4g.small"
MIN_STORAGE_GIB = 20
MAX_STORAGE_GIB = 65536


class DatabaseConfig(StrictModel):
    """RDS for MariaDB, single-AZ in the cluster's availability zone, kept in the Storage stack."""

    instance_class: str = Field(
        default=DEFAULT_INSTANCE_CLASS,
        description="RDS instance class; changed in place (a restart), never replaced.",
    )
    storage_gib: int = Field(
        default=MIN_STORAGE_GIB,
        ge=MIN_STORAGE_GIB,
        le=MAX_STORAGE_GIB,
        description="gp3 storage in GiB; RDS can grow it but never shrink it.",
    )
    backup_retention_days: int = Field(
        default=7, ge=1, le=35, description="Days of automated backups (point-in-time restore)."
    )
    subnet_ids: list[SubnetId] | None = Field(
        default=None,
        description="With network.vpc_id: two private subnets in two availability zones, one of them in "
        "availability_zone (an RDS subnet group needs two zones; the database runs in the cluster's). "
        "null with a created VPC, which gets two small database subnets.",
    )
    second_availability_zone: str | None = Field(
        default=None,
        description="Created VPC: the zone of the second database subnet, which stays empty; "
        "null: the first of the region's a, b, c that is not availability_zone.",
    )

    @field_validator("instance_class")
    @classmethod
    def _instance_class(cls, value: str) -> str:
        if not re.fullmatch(r"db\.[a-z0-9-]+\.[a-z0-9]+", value):
            raise fail(
                "instance_class",
                f"'{value}' is not an RDS instance class; use one like {DEFAULT_INSTANCE_CLASS}",
            )
        return value

    @field_validator("subnet_ids")
    @classmethod
    def _two_subnets(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and (len(value) != 2 or value[0] == value[1]):
            raise fail(
                "subnet_ids",
                "list two different private subnets in two availability zones, one of them in "
                "availability_zone",
            )
        return value


def second_zone(region: str, availability_zone: str, chosen: str | None) -> str:
    """The created VPC's second database zone: `chosen`, else the first of a, b, c that is not
    the cluster's (preflight checks it exists in the account)."""
    if chosen is not None:
        return chosen
    return next(region + letter for letter in "abc" if region + letter != availability_zone)


def placement_problem(
    database: DatabaseConfig, *, cluster: str, region: str, availability_zone: str, existing_vpc: bool
) -> tuple[str, str] | None:
    """(field path, what is wrong) when the database cannot be placed in the cluster's network."""
    if "--" in cluster:
        # The instance's identifier starts with the cluster's name (gpucluster.names).
        return (
            "name",
            f"'{cluster}' has two hyphens in a row, which RDS refuses in the database's identifier "
            "(it starts with the cluster's name); rename the cluster",
        )
    if region not in rds_ca.COVERED_REGIONS:
        # slurmdbd would refuse the database's certificate at the head's first connection.
        return (
            "accounting.database",
            f"RDS in {region} signs its certificates with a root CA that the RDS CA bundle this "
            "gpucluster vendors does not hold (gpucluster/rds_ca.py lists its regions); use a "
            "gpucluster release that vendors AWS's newer bundle, or accounting.external",
        )
    if existing_vpc and database.subnet_ids is None:
        return (
            "accounting.database.subnet_ids",
            "with network.vpc_id the database needs two private subnets of that VPC in two "
            f"availability zones, one of them in {availability_zone}; list their ids",
        )
    if not existing_vpc and database.subnet_ids is not None:
        return (
            "accounting.database.subnet_ids",
            "only with network.vpc_id; a created VPC gets its own database subnets, so remove it",
        )
    zone = database.second_availability_zone
    if zone is not None and (
        existing_vpc or zone == availability_zone or not re.fullmatch(rf"{re.escape(region)}[a-z]", zone)
    ):
        return (
            "accounting.database.second_availability_zone",
            f"'{zone}' must be another zone of {region} than {availability_zone}, and is only for a "
            "created VPC",
        )
    return None

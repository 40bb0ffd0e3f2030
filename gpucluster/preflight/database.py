"""What the accounting database needs from the account (accounting.database): an RDS subnet
group spans two availability zones while the cluster lives in one, so its second zone must
exist (a created VPC) or the two listed subnets must sit in the VPC and in two zones, one the
cluster's (an existing VPC); the instance class must be sold for the engine in the cluster's
zone; and the RDS quotas must leave room for one more instance, subnet group and parameter group.
"""

from __future__ import annotations

from typing import Any

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import aws_call
from gpucluster.config import ClusterConfig
from gpucluster.preflight.result import Result, failed, passed
from gpucluster.resolved.accounting import ResolvedDatabase, resolve_accounting

CHECK = "accounting database"
# RDS DescribeAccountAttributes quota names, each of which the Storage stack takes one of.
QUOTAS = ("DBInstances", "DBSubnetGroups", "DBParameterGroups")


def database(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    accounting = resolve_accounting(cfg)
    if accounting is None:
        return []
    if accounting.database is None:
        return [
            passed(
                CHECK,
                f"none created: slurmctld reports to the slurmdbd at {accounting.external_host}:"
                f"{accounting.slurmdbd_port}, not checked from here (it must share this cluster's "
                "munge key)",
            )
        ]
    db = accounting.database
    return [*_zones(clients, cfg, db), *_orderable(clients, cfg, db), *_quotas(clients, cfg)]


def _zones(clients: Clients, cfg: ClusterConfig, db: ResolvedDatabase) -> list[Result]:
    check = f"{CHECK} zones"
    if db.existing_subnet_ids is not None:
        return _listed_subnets(clients, cfg, db.existing_subnet_ids)
    with aws_call("ec2:DescribeAvailabilityZones", cfg.region):
        zones = clients.get("ec2", cfg.region).describe_availability_zones()["AvailabilityZones"]
    available = sorted(z["ZoneName"] for z in zones if z.get("State", "available") == "available")
    spare = db.second_availability_zone
    if spare in available:
        return [passed(check, f"subnet group in {cfg.availability_zone} (the database) and {spare} (spare)")]
    others = ", ".join(zone for zone in available if zone != cfg.availability_zone) or "none"
    return [
        failed(
            check,
            f"the database subnet group's second zone {spare} is not an available zone of {cfg.region}",
            f"set accounting.database.second_availability_zone to one of: {others}",
        )
    ]


def _listed_subnets(clients: Clients, cfg: ClusterConfig, subnet_ids: tuple[str, ...]) -> list[Result]:
    check = f"{CHECK} subnets"
    with aws_call("ec2:DescribeSubnets", cfg.region):
        subnets: list[dict[str, Any]] = clients.get("ec2", cfg.region).describe_subnets(
            SubnetIds=list(subnet_ids)
        )["Subnets"]
    fix = (
        f"list two private subnets of {cfg.network.vpc_id} in two availability zones, one of them "
        f"{cfg.availability_zone}, in accounting.database.subnet_ids"
    )
    elsewhere = [s["SubnetId"] for s in subnets if s["VpcId"] != cfg.network.vpc_id]
    if elsewhere:
        return [failed(check, f"{', '.join(elsewhere)} not in {cfg.network.vpc_id}", fix)]
    zones = {s["SubnetId"]: s["AvailabilityZone"] for s in subnets}
    shown = ", ".join(f"{subnet} in {zone}" for subnet, zone in zones.items())
    if len(set(zones.values())) < 2 or cfg.availability_zone not in zones.values():
        return [failed(check, f"{shown}: need two zones, one of them {cfg.availability_zone}", fix)]
    return [passed(check, shown)]


def _orderable(clients: Clients, cfg: ClusterConfig, db: ResolvedDatabase) -> list[Result]:
    check = f"{db.instance_class} for {db.engine}"
    paginator = clients.get("rds", cfg.region).get_paginator("describe_orderable_db_instance_options")
    zones: set[str] = set()
    with aws_call("rds:DescribeOrderableDBInstanceOptions", cfg.region):
        for page in paginator.paginate(
            Engine=db.engine, EngineVersion=db.engine_version, DBInstanceClass=db.instance_class
        ):
            for option in page.get("OrderableDBInstanceOptions", []):
                zones.update(zone["Name"] for zone in option.get("AvailabilityZones", []))
    if cfg.availability_zone in zones:
        return [passed(check, f"{db.engine} {db.engine_version} on it is offered in {cfg.availability_zone}")]
    return [
        failed(
            check,
            f"RDS offers no {db.engine} {db.engine_version} on {db.instance_class} in "
            f"{cfg.availability_zone}",
            "pick another accounting.database.instance_class (`aws rds "
            f"describe-orderable-db-instance-options --engine {db.engine} --engine-version "
            f"{db.engine_version}`)",
        )
    ]


def _quotas(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    with aws_call("rds:DescribeAccountAttributes", cfg.region):
        listed = clients.get("rds", cfg.region).describe_account_attributes()["AccountQuotas"]
    quotas = {q["AccountQuotaName"]: (int(q["Used"]), int(q["Max"])) for q in listed}
    results = []
    for name in QUOTAS:
        if name not in quotas:
            continue
        used, most = quotas[name]
        check = f"quota RDS {name}"
        if used + 1 <= most:
            results.append(passed(check, f"{used} of {most} used; the database takes one more"))
        else:
            results.append(
                failed(
                    check,
                    f"{used} of {most} used; the database needs one more",
                    f"delete an unused one or ask for more (Service Quotas, Amazon RDS, {name})",
                )
            )
    return results

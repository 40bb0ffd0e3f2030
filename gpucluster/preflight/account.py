"""Checks of the account and region: credentials, AZ, instance types, AMI, CDK, VPC."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from gpucluster.ami.pin import describe_image, resolve_parameter
from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import aws_call
from gpucluster.config import ClusterConfig
from gpucluster.config.orchestrator import EKS
from gpucluster.config.subnet_addresses import addresses_needed, prefix_for
from gpucluster.preflight.result import Result, failed, passed
from gpucluster.preflight.service_nodes import service_nodes

# The synthesized templates' CheckBootstrapVersion rule refuses older bootstrap stacks.
MIN_BOOTSTRAP_VERSION = 6
BOOTSTRAP_STACK = "CDKToolkit"
# Names of the Ubuntu 24.04 base DLAMI, like
# "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 24.04) 20261120".
DLAMI_NAME = re.compile(r"^Deep Learning .*\(Ubuntu 24\.04\)")


def credentials(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    with aws_call("sts:GetCallerIdentity", cfg.region):
        identity: dict[str, Any] = clients.get("sts", cfg.region).get_caller_identity()
    account = identity["Account"]
    if cfg.account and cfg.account != account:
        return [
            failed(
                "credentials",
                f"the credentials are for account {account}, the config names {cfg.account}",
                "use a profile of the config's account (AWS_PROFILE) or fix `account`",
            )
        ]
    return [passed("credentials", f"account {account} as {identity.get('Arn', '?')}")]


def zone(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    with aws_call("ec2:DescribeAvailabilityZones", cfg.region):
        zones: list[dict[str, Any]] = clients.get("ec2", cfg.region).describe_availability_zones()[
            "AvailabilityZones"
        ]
    states = {z["ZoneName"]: z.get("State", "available") for z in zones}
    usable = ", ".join(sorted(name for name, state in states.items() if state == "available"))
    if states.get(cfg.availability_zone) == "available":
        return [passed("region and AZ", f"{cfg.availability_zone} is available in {cfg.region}")]
    return [
        failed(
            "region and AZ",
            f"{cfg.availability_zone} is {states.get(cfg.availability_zone, 'not a zone of ' + cfg.region)}",
            f"set availability_zone to one of: {usable}",
        )
    ]


def _all_types(cfg: ClusterConfig) -> dict[str, int]:
    """Instance type -> how many the cluster runs at most."""
    counts: dict[str, int] = defaultdict(int)
    for _, instance_type, count in service_nodes(cfg):
        counts[instance_type] += count
    for group in cfg.compute_groups:
        counts[group.instance_type] += group.count
    return dict(counts)


def instance_types(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    wanted = sorted(_all_types(cfg))
    paginator = clients.get("ec2", cfg.region).get_paginator("describe_instance_type_offerings")
    offered: set[str] = set()
    with aws_call("ec2:DescribeInstanceTypeOfferings", cfg.region):
        for page in paginator.paginate(
            LocationType="availability-zone",
            Filters=[
                {"Name": "location", "Values": [cfg.availability_zone]},
                {"Name": "instance-type", "Values": wanted},
            ],
        ):
            offered.update(o["InstanceType"] for o in page.get("InstanceTypeOfferings", []))
    return [
        passed(f"{name} in AZ", f"offered in {cfg.availability_zone}")
        if name in offered
        else failed(
            f"{name} in AZ",
            f"not offered in {cfg.availability_zone}",
            "pick an AZ that offers it (`aws ec2 describe-instance-type-offerings --location-type "
            "availability-zone`) or another instance type",
        )
        for name in wanted
    ]


def image(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    if cfg.orchestrator == EKS:
        return [passed("AMI", "not used on EKS: node groups boot the EKS-optimized AMI of their AMI type")]
    ami_id = cfg.image.ami_id or resolve_parameter(clients, cfg.region, cfg.image.ssm_parameter)
    found = describe_image(clients, cfg.region, ami_id)
    if found is None:
        return [
            failed(
                "AMI",
                f"{ami_id} does not exist in {cfg.region} or is not shared with the account",
                "pin an AMI of this region (`gpucluster ami pin`)",
            )
        ]
    if found.architecture != "x86_64":
        return [failed("AMI", f"{ami_id} is {found.architecture}", "use an x86_64 Deep Learning AMI")]
    if not DLAMI_NAME.match(found.name):
        return [
            failed(
                "AMI",
                f"{ami_id} is '{found.name}', not the Ubuntu 24.04 Deep Learning AMI",
                "pin the DLAMI: `gpucluster ami pin` with the default image.ssm_parameter",
            )
        ]
    if cfg.image.ami_id is not None:
        expected = _parameter_family(clients, cfg)
        if expected is not None and expected != dlami_family(found.name):
            return [
                failed(
                    "AMI",
                    f"{ami_id} is '{found.name}', but image.ssm_parameter names '{expected}' images",
                    "pin an image of that parameter (`gpucluster ami pin`), or set "
                    "image.ssm_parameter to the family of the pinned image",
                )
            ]
    return [passed("AMI", f"{ami_id}: {found.name}")]


def dlami_family(name: str) -> str:
    """A DLAMI's name without its release date: the same for every release of one image."""
    return re.sub(r"\s*\d{8}(\.\d+)?$", "", name)


def _parameter_family(clients: Clients, cfg: ClusterConfig) -> str | None:
    """The family of the image the config's parameter names today; None when it cannot be
    read: a pinned image deploys without it, so that is no reason to fail."""
    from gpucluster.aws.errors import AwsError

    try:
        current = describe_image(
            clients, cfg.region, resolve_parameter(clients, cfg.region, cfg.image.ssm_parameter)
        )
    except AwsError:
        return None
    return dlami_family(current.name) if current is not None else None


def cdk_bootstrap(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    from gpucluster.aws.errors import AwsError

    fix = f"run `npx cdk bootstrap aws://ACCOUNT/{cfg.region}`"
    try:
        with aws_call("cloudformation:DescribeStacks", cfg.region):
            stacks = clients.get("cloudformation", cfg.region).describe_stacks(StackName=BOOTSTRAP_STACK)[
                "Stacks"
            ]
    except AwsError as exc:
        if "does not exist" not in exc.line:
            raise
        return [failed("CDK bootstrap", f"no {BOOTSTRAP_STACK} stack in {cfg.region}", fix)]
    stack = stacks[0]
    status = stack.get("StackStatus", "")
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in stack.get("Outputs", [])}
    version = outputs.get("BootstrapVersion", "0")
    if not status.endswith("_COMPLETE") or "ROLLBACK" in status:
        return [
            failed("CDK bootstrap", f"{BOOTSTRAP_STACK} is {status}", f"fix or delete the stack, then {fix}")
        ]
    if not version.isdigit() or int(version) < MIN_BOOTSTRAP_VERSION:
        return [
            failed("CDK bootstrap", f"version {version}, the templates need {MIN_BOOTSTRAP_VERSION}+", fix)
        ]
    return [passed("CDK bootstrap", f"{BOOTSTRAP_STACK} version {version} ({status})")]


def network(clients: Clients, cfg: ClusterConfig) -> list[Result]:
    net = cfg.network
    if net.subnet_id is None:
        return [passed("network", f"a new VPC {net.cidr} is created in {cfg.availability_zone}")]
    with aws_call("ec2:DescribeSubnets", cfg.region):
        subnets = clients.get("ec2", cfg.region).describe_subnets(SubnetIds=[net.subnet_id])["Subnets"]
    subnet = subnets[0]
    needs = addresses_needed(cfg)
    problems = []
    if subnet["VpcId"] != net.vpc_id:
        problems.append((f"{net.subnet_id} is in {subnet['VpcId']}, not {net.vpc_id}", "fix network.vpc_id"))
    if subnet["AvailabilityZone"] != cfg.availability_zone:
        problems.append(
            (
                f"{net.subnet_id} is in {subnet['AvailabilityZone']}, not {cfg.availability_zone}",
                "use a private subnet of availability_zone",
            )
        )
    free = int(subnet.get("AvailableIpAddressCount", 0))
    if free < needs.total:
        problems.append(
            (
                f"{net.subnet_id} ({subnet.get('CidrBlock', '?')}) has {free} free addresses, the cluster "
                f"needs {needs.total}: {needs.breakdown()}",
                f"use a subnet with {needs.total} free addresses (a /{prefix_for(needs.total)} or larger "
                "holds them), or free addresses in this one",
            )
        )
    if problems:
        return [failed("network", what, fix) for what, fix in problems]
    return [
        passed(
            "network",
            f"{net.subnet_id} ({subnet.get('CidrBlock', '?')}) in {cfg.availability_zone}: {free} free "
            f"addresses, the cluster needs {needs.total}",
        )
    ]

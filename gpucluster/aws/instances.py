"""The cluster's running nodes of one role, found by the tags every node carries."""

from __future__ import annotations

from gpucluster import names
from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import aws_call
from gpucluster.config import ClusterConfig


def running_instances(clients: Clients, cfg: ClusterConfig, role: str) -> list[str]:
    """Instance ids, sorted, of the running `role` nodes (head, login, compute) of `cfg`'s cluster."""
    ec2 = clients.get("ec2", cfg.region)
    filters = [
        {"Name": f"tag:{names.CLUSTER_TAG}", "Values": [cfg.name]},
        {"Name": f"tag:{names.ROLE_TAG}", "Values": [role]},
        {"Name": "instance-state-name", "Values": ["running"]},
    ]
    with aws_call("ec2:DescribeInstances", cfg.region):
        pages = list(ec2.get_paginator("describe_instances").paginate(Filters=filters))
    return sorted(i["InstanceId"] for page in pages for r in page["Reservations"] for i in r["Instances"])

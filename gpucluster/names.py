"""Names shared by the stacks, the renderer and the node scripts.

Nodes find deploy-time facts (file system ids, the munge key's secret ARN) in SSM
Parameter Store under one prefix, so the stateless Cluster stack never imports
values from the stateful Storage stack.
"""

from __future__ import annotations

from gpucluster.config import ClusterConfig

# Compute nodes complete this Auto Scaling launch hook once they joined Slurm.
LAUNCH_LIFECYCLE_HOOK = "gpucluster-launch"

# Construct id of the head node in the Cluster stack. Its logical IDs start with it, and
# `gpucluster diff` finds the head's instance by it; renaming it would replace the head.
HEAD_NODE_ID = "HeadNode"


def stack_names(cfg: ClusterConfig) -> dict[str, str]:
    return {
        "network": f"{cfg.name}-network",
        "storage": f"{cfg.name}-storage",
        "cluster": f"{cfg.name}-cluster",
    }


def parameter_prefix(cfg: ClusterConfig) -> str:
    return f"/gpucluster/{cfg.name}"


def private_zone(cfg: ClusterConfig) -> str:
    return f"{cfg.name}.gpucluster.internal"


def controller_host(cfg: ClusterConfig) -> str:
    return f"slurmctld.{private_zone(cfg)}"


# The munge secret's name ends with this many hex characters taken from the Storage
# stack's id: the secret is retained on delete, so a fixed name would make the next
# deploy of the stack fail with "already exists" (issue 10, item 9).
MUNGE_SECRET_SUFFIX_LENGTH = 12


def munge_secret_name_prefix(cfg: ClusterConfig) -> str:
    """The munge secret's name without its per-stack suffix; IAM policies match on it."""
    return f"gpucluster/{cfg.name}/munge-key-"


def munge_secret_name_pattern(cfg: ClusterConfig) -> str:
    """IAM resource-name pattern of the secret: the stack suffix, then Secrets Manager's own."""
    return munge_secret_name_prefix(cfg) + "?" * MUNGE_SECRET_SUFFIX_LENGTH + "-??????"


def log_agent_config_parameter(cfg: ClusterConfig) -> str:
    """The CloudWatch agent's configuration, which every node fetches at boot."""
    return f"{parameter_prefix(cfg)}/logs/agent-config"


def compute_group_parameter(cfg: ClusterConfig, group: str) -> str:
    """JSON facts about one compute group (Auto Scaling group name, capacity) for the head node."""
    return f"{parameter_prefix(cfg)}/compute/{group}"


def bundle_parameter(cfg: ClusterConfig) -> str:
    """SSM parameter holding `<sha256> <s3 url>` of the current bootstrap bundle.

    The head node reads it at boot and polls it afterwards, so its user data never names
    a bundle, which moves with every cluster setting."""
    return f"{parameter_prefix(cfg)}/bootstrap/bundle"


STORAGE_FACTS = ("efs_id", "fsx_dns_name", "fsx_mount_name", "munge_secret_arn")


def storage_parameter(cfg: ClusterConfig, fact: str) -> str:
    """SSM parameter the Storage stack writes and nodes read at boot."""
    if fact not in STORAGE_FACTS:
        raise ValueError(f"unknown storage fact {fact!r}; expected one of {STORAGE_FACTS}")
    return f"{parameter_prefix(cfg)}/storage/{fact}"


def role_name_prefix(cfg: ClusterConfig) -> str:
    """IAM role names of the cluster's nodes start with this; the munge secret trusts it."""
    return f"gpucluster-{cfg.name}-{cfg.region}-"

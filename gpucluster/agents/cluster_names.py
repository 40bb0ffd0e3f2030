"""Names the head node's agents share with the stacks and the bootstrap.

Each format is written here once. The agents ship as the package tree of what they import
(gpucluster.agent_package) and import only the standard library and each other, so this
module is where the rest of gpucluster takes these names from too (gpucluster.names
re-exports them, and the bootstrap renders the node name format into the shell from here).
"""

from __future__ import annotations

import re

# A cluster's name: 1-20 lower-case letters, digits and hyphens, a letter first and no hyphen
# last; it prefixes stack names, SSM paths and host names.
CLUSTER_NAME = r"[a-z](?:[a-z0-9-]{0,18}[a-z0-9])?"
# A compute group's name: also its Slurm partition and node feature.
GROUP_NAME = r"[a-z][a-z0-9]{0,19}"
# EC2 instance ids are i- and 8 (before 2016) or 17 hex digits (EC2 User Guide, "Resource
# IDs": https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html).
INSTANCE_ID = r"i-(?:[0-9a-f]{8}|[0-9a-f]{17})"


def group_feature(group: str) -> str:
    """The Slurm node feature of compute group `group`'s nodes; its nodeset selects them by it."""
    return group


def group_partition(group: str) -> str:
    """The Slurm partition of compute group `group`."""
    return group


# A compute node registers as a dynamic Slurm node named after its group and its EC2
# instance: unique, and stable for the instance's life. Written once, here.
COMPUTE_NODE_NAME_FORMAT = "{group}-{instance_id}"
_NODE_NAME_GROUPS = {"group": f"(?P<group>{GROUP_NAME})", "instance_id": f"(?P<instance_id>{INSTANCE_ID})"}
COMPUTE_NODE_NAME = re.compile(f"^{COMPUTE_NODE_NAME_FORMAT.format(**_NODE_NAME_GROUPS)}$")
_INSTANCE_ID = re.compile(INSTANCE_ID)


def compute_node_name(group: str, instance_id: str) -> str:
    """The Slurm node name of compute group `group`'s instance `instance_id`."""
    if not _INSTANCE_ID.fullmatch(instance_id):
        raise ValueError(f"'{instance_id}' is not an EC2 instance id (i- and 8 or 17 hex digits)")
    return COMPUTE_NODE_NAME_FORMAT.format(group=group, instance_id=instance_id)


# The label the EKS stack puts on a compute group's Kubernetes nodes (gpucluster.eks.labels),
# by which the EKS topology writer finds the nodes it places.
LABEL_PREFIX = "gpucluster.io"
COMPUTE_GROUP_LABEL = f"{LABEL_PREFIX}/compute-group"
# The head node's agents read their settings (GPUCLUSTER_*) from this file, which the
# bootstrap installs and their systemd units name in EnvironmentFile=.
AGENT_ENV_FILE = "/etc/gpucluster/agents.env"
# The tree topology's file, which the topology agent rewrites from EC2; in SlurmSite's
# default config_dir (/etc/slurm), where slurmctld looks for it beside slurm.conf.
TOPOLOGY_CONF = "/etc/slurm/topology.conf"
# The keys in it that the bootstrap writes and the agents read.
CLUSTER_SETTING = "GPUCLUSTER_CLUSTER"
REGION_SETTING = "GPUCLUSTER_REGION"


def parameter_prefix(cluster: str) -> str:
    """Every SSM parameter of a cluster is under this path."""
    return f"/gpucluster/{cluster}"


def compute_groups_path(cluster: str) -> str:
    """The path under which the Cluster stack publishes one parameter per compute group."""
    return f"{parameter_prefix(cluster)}/compute"


def compute_group_parameter(cluster: str, group: str) -> str:
    return f"{compute_groups_path(cluster)}/{group}"

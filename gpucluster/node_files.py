"""The seam between the node-file renderer (gpucluster.bootstrap) and the infrastructure
(gpucluster.stacks, gpucluster.constructs_lib): what the first hands the second, so neither
imports the other.

The bundle's URL is a CDK token known only while the stacks are built, after the node
files are rendered: the user data and the bundle's SSM pointer carry BUNDLE_URL_SLOT in
its place, and infrastructure fills it with `with_bundle_url` (a plain str.replace, so the
text is byte for byte what rendering with the token would have given). The CloudWatch
agent's configuration names the node log group, a token too, by LOG_GROUP_SLOT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# Neither occurs in anything rendered: `@` starts no shell word the templates write.
BUNDLE_URL_SLOT = "@GPUCLUSTER_BUNDLE_URL@"
LOG_GROUP_SLOT = "@GPUCLUSTER_LOG_GROUP@"

Json = str | int | float | bool | None | list["Json"] | dict[str, "Json"]


@dataclass(frozen=True)
class NodeFiles:
    # The bootstrap bundle: a reproducible tar.gz of every file of every role, and its sha256.
    bundle: bytes
    bundle_sha256: str
    # `<sha256> BUNDLE_URL_SLOT`: the bundle parameter's value, which the head polls.
    bundle_pointer: str
    # Thin user data. The head's names no bundle (it reads the pointer from SSM); the login
    # nodes' (None without login nodes) and each compute group's carry BUNDLE_URL_SLOT.
    head_user_data: str
    login_user_data: str | None
    compute_user_data: Mapping[str, str]
    # What the nodes' boot and logs ask of the infrastructure: how long a compute node's
    # launch hook waits for its heartbeats, and the CloudWatch agent's configuration (the
    # log group named by LOG_GROUP_SLOT) with the days its group keeps the logs.
    launch_hook_timeout_seconds: int
    log_agent_config: Mapping[str, Json]
    log_retention_days: int
    # The port slurmctld listens on, which the controller's SRV record names.
    slurmctld_port: int


def with_bundle_url(text: str, url: str) -> str:
    """`text` (user data or the bundle pointer) with the bundle's URL in its slot."""
    if BUNDLE_URL_SLOT not in text:
        raise ValueError("the text has no bundle URL slot to fill")
    return text.replace(BUNDLE_URL_SLOT, url)


def with_log_group(value: Json, log_group_name: str) -> Json:
    """The agent configuration with the node log group's name in its slots."""
    if isinstance(value, str):
        return value.replace(LOG_GROUP_SLOT, log_group_name)
    if isinstance(value, list):
        return [with_log_group(item, log_group_name) for item in value]
    if isinstance(value, dict):
        return {key: with_log_group(item, log_group_name) for key, item in value.items()}
    return value

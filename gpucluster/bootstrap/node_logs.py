"""Node logs in CloudWatch: what the CloudWatch agent ships and where it comes from.

Every node runs the agent with one configuration that the Cluster stack stores in
SSM (names.log_agent_config_parameter); it ships the bootstrap log and the Slurm
daemons' logs into the cluster's log group, one stream per instance and file, and the
collectors' metric lines (gpucluster.agents.emf), from which CloudWatch extracts the
cluster's metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucluster.agents.emf import METRICS_LOG_GLOB
from gpucluster.agents.repair_settings import EVENTS_FILE as NODE_REPAIR_EVENTS
from gpucluster.slurm.conf import SlurmSite

# Written by the thin user-data (templates/userdata/thin.sh.j2) on every role.
BOOTSTRAP_LOG = "/var/log/gpucluster-bootstrap.log"
# Days CloudWatch keeps node logs; one of the values CloudWatch Logs accepts.
RETENTION_DAYS = 90
# Where the agent's control script lives when the package is installed (image or ours).
AGENT_CTL = "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"


@dataclass(frozen=True)
class AgentDownload:
    version: str
    url: str
    sha256: str


# Used only when the image lacks the agent. Pinned release from Amazon's bucket; the
# sha256 is the one two independent pins of this exact URL agree on. The .deb is also
# signed by the key with fingerprint 9376 16F3 450B 7D80 6CBD 9725 D581 6730 3B78 9C72
# (CloudWatch agent guide, "Verifying the signature of the CloudWatch agent package").
CLOUDWATCH_AGENT = AgentDownload(
    version="1.300072.0b1766",
    url="https://amazoncloudwatch-agent.s3.amazonaws.com/ubuntu/amd64/1.300072.0b1766/amazon-cloudwatch-agent.deb",
    sha256="05baeadca96c4bb8e43906ed09cf0bebd0f321ff6d41987bdc46ce681de0978d",
)


def shipped_files(site: SlurmSite) -> dict[str, str]:
    """Log file -> stream suffix. A file a role does not write is simply never shipped."""
    return {
        BOOTSTRAP_LOG: "bootstrap",
        site.slurmctld_log_file: "slurmctld",
        site.slurmd_log_file: "slurmd",
        # The head's node_repair agent: each replacement and each ALERT of its bound.
        str(NODE_REPAIR_EVENTS): "node-repair",
        METRICS_LOG_GLOB: "metrics",
    }


def agent_config(log_group_name: str, site: SlurmSite) -> dict[str, Any]:
    """The agent's JSON configuration; `log_group_name` may be a CloudFormation token."""
    collect = [
        {
            "file_path": path,
            "log_group_name": log_group_name,
            # {instance_id} is expanded by the agent on each node.
            "log_stream_name": f"{{instance_id}}/{stream}",
            "timezone": "UTC",
            # The collectors start a file each hour; the agent deletes one it has finished.
            **({"auto_removal": True} if path == METRICS_LOG_GLOB else {}),
        }
        for path, stream in shipped_files(site).items()
    ]
    return {
        "agent": {"run_as_user": "root"},
        "logs": {"logs_collected": {"files": {"collect_list": collect}}},
    }

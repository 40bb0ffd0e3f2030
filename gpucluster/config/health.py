"""The config's `health` section: what happens to a compute node that fails a check.

One module per config section. Each block of fields is owned by one feature; the head's
node_repair agent reads the replacement block through its settings file
(gpucluster.bootstrap.bundle.agent_settings).
"""

from __future__ import annotations

from pydantic import Field

from gpucluster.config.fields import StrictModel


class HealthConfig(StrictModel):
    # Replacement of failed nodes (the head's node_repair agent; README "When a node fails").
    replace_failed_nodes: bool = Field(
        default=True,
        description=(
            "Replace a compute node that one of gpucluster's checks drained (or that stopped "
            "answering): its jobs are requeued and its instance terminated, and Auto Scaling "
            "launches another into the same reservation. false: failed nodes stay drained."
        ),
    )
    max_replacements_per_hour: int = Field(
        default=2,
        ge=1,
        le=64,
        description=(
            "At most this many nodes replaced in any hour. More failures stop replacement and "
            "log an ALERT until a person clears it (a bad AMI or security group fails every node)."
        ),
    )
    drain_grace_minutes: int = Field(
        default=10,
        ge=0,
        le=1440,
        description=(
            "How long a failed node that still runs a job, or one that stopped answering, is "
            "given before it is replaced (its jobs are requeued then)."
        ),
    )

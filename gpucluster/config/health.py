"""The config's `health` section: what checks a compute node beyond the health check slurmd
runs every 5 minutes, and what happens to a node that fails a check (README "When a node fails").

Each block of fields is owned by one feature; the head's node_repair agent reads the
replacement block through its settings file (gpucluster.bootstrap.bundle.agent_settings).
"""

from __future__ import annotations

from pydantic import Field, field_validator

from gpucluster import dcgm
from gpucluster.config.fields import StrictModel, fail
from gpucluster.node_root import NODE_ROOT


class HealthConfig(StrictModel):
    """Node checks and what happens to a node that fails them."""

    # Deep checks (issue 28, item 3).
    dcgm_level_at_join: int = Field(
        default=dcgm.DEFAULT_JOIN_LEVEL,
        description=(
            "Level of DCGM's diagnostic (dcgmi diag -r LEVEL) a compute node runs before it joins "
            "Slurm: 1 (seconds), 2 (about 2 minutes) or 0 (off). A failing node does not join and "
            "Auto Scaling replaces it. Levels 3 and 4 run on demand as the dcgm-diag job."
        ),
    )
    prolog_check: bool = Field(
        default=True,
        description=(
            "Check GPUs, EFA devices and Fabric Manager in Slurm's Prolog before every job; a "
            "failing node is drained ('prolog: ...') and the job requeued onto another node."
        ),
    )

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

    @field_validator("dcgm_level_at_join")
    @classmethod
    def _join_level(cls, value: int) -> int:
        if value not in dcgm.JOIN_LEVELS:
            raise fail(
                "dcgm_level",
                f"{value} is not a level a node runs before it joins; use 0 (off), 1 or 2. "
                "Levels 3 and 4 run for 15 minutes to hours: run them as the dcgm-diag job "
                f"(sudo sbatch --time=63 {NODE_ROOT}/jobs/<group>/dcgm-diag.sbatch 3)",
            )
        return value

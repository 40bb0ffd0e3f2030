"""`monitoring:`: where the cluster's alarms go and when they fire (the dashboard has no settings)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from gpucluster.config.fields import StrictModel, matching

# Deliberately plain: SNS sends a confirmation mail, which is the real check of an address.
Email = Annotated[
    str,
    matching(
        r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
        "email",
        "'{value}' is not an email address; use one like ops@example.com",
    ),
]


class MonitoringConfig(StrictModel):
    alarm_email: Email | None = Field(
        default=None,
        description=(
            "Subscribe this address to the cluster's alarm topic (SNS mails a confirmation link "
            "first). null: the topic has no subscriber; subscribe one yourself."
        ),
    )
    node_unavailable_minutes: int = Field(
        default=15, ge=1, le=1440, description="Alarm when a node has been drained or down this long."
    )
    idle_gpu_minutes: int = Field(
        default=30,
        ge=5,
        le=1440,
        description="Alarm when allocated GPUs have sat below 5% utilization this long.",
    )
    fsx_free_percent: int = Field(
        default=10, ge=1, le=90, description="Alarm when FSx for Lustre has less free space than this."
    )

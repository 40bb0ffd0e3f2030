"""A compute group's `capacity:`: on-demand, an On-Demand Capacity Reservation, or a Capacity Block."""

from __future__ import annotations

from datetime import UTC, datetime, time
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gpucluster.config import capacity_block_rules
from gpucluster.config.fields import ReservationId, StrictModel, fail, fail_at, from_text

CAPACITY_BLOCK_SIZES = (1, 2, 4, 8, 16, 32, 64)
CAPACITY_BLOCK_END_UTC = time(11, 30)
# YAML reads an unquoted ISO 8601 time as a timestamp; a quoted one stays text and is read too.
Timestamp = Annotated[datetime, *from_text(datetime, "a date and time like 2026-12-01T11:30:00Z")]


class OnDemandCapacity(StrictModel):
    type: Literal["on-demand"]


class OdcrCapacity(StrictModel):
    type: Literal["odcr"]
    reservation_id: ReservationId


class CapacityBlockCapacity(StrictModel):
    type: Literal["capacity-block"]
    reservation_id: ReservationId
    start: Timestamp = Field(description="Block start (UTC, ISO 8601), as EC2 reports it.")
    end: Timestamp = Field(description="Block end (UTC, ISO 8601); blocks end at 11:30 UTC.")

    @field_validator("start", "end")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        if value.tzinfo is None:
            raise fail(
                "timezone",
                "needs a time zone; write it in UTC like 2026-12-01T11:30:00Z",
            )
        return value.astimezone(UTC)

    @model_validator(mode="after")
    def _window(self, info: ValidationInfo) -> CapacityBlockCapacity:
        if self.start >= self.end:
            raise fail_at(
                "start", f"start {self.start:%Y-%m-%dT%H:%MZ} must be before end {self.end:%Y-%m-%dT%H:%MZ}"
            )
        if self.end.timetz().replace(tzinfo=None) != CAPACITY_BLOCK_END_UTC:
            raise fail_at(
                "end",
                f"end {self.end:%Y-%m-%dT%H:%MZ} is not at 11:30 UTC; every Capacity Block ends "
                "at 11:30 UTC: copy EndDate from `aws ec2 describe-capacity-reservations`",
            )
        problem = capacity_block_rules.duration_problem(self.start, self.end)
        if problem:
            raise fail_at("end", problem)
        # The clock comes from the caller (`parse_config(now=...)`) or GPUCLUSTER_NOW so
        # tests and reproducible CI do not expire with the calendar.
        now = capacity_block_rules.current_time((info.context or {}).get("now"))
        problem = capacity_block_rules.expiry_problem(self.end, now)
        if problem:
            raise fail_at("end", problem)
        return self


Capacity = Annotated[OnDemandCapacity | OdcrCapacity | CapacityBlockCapacity, Field(discriminator="type")]

"""The instances: `head_node:`, `login_nodes:` and each of `compute_groups:`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, PositiveInt, field_validator, model_validator

from gpucluster.agents.cluster_names import GROUP_NAME
from gpucluster.catalog import InstanceType, load_catalog
from gpucluster.config import placement_rules
from gpucluster.config.capacity import (
    CAPACITY_BLOCK_SIZES,
    Capacity,
    CapacityBlockCapacity,
    OdcrCapacity,
    OnDemandCapacity,
)
from gpucluster.config.fields import InstanceTypeName, StrictModel, fail, fail_at, matching, slurm_minutes
from gpucluster.config.slurm_time import MINUTES_PER_DAY, format_minutes

# The name becomes a Slurm partition, a node-name prefix and a node feature.
GroupName = Annotated[
    str,
    matching(
        rf"^{GROUP_NAME}$",
        "name",
        "'{value}' is not a usable group name; use 1-20 lower-case letters and digits "
        "starting with a letter (it becomes a Slurm partition, node-name prefix and feature)",
    ),
]
RESERVED_GROUP_NAMES = frozenset({"all", "default"})
# A job submitted without --time gets DefaultTime. Never INFINITE: a Capacity Block's
# end-of-block MAINT reservation exists for the whole block, and a job whose limit reaches
# into it never starts (the scheduler only starts a job that ends before a reservation
# on its nodes begins).
DEFAULT_TIME_MINUTES = 60
# MaxTime of groups not bound by a block: long enough for real training runs, short
# enough that a forgotten job does not hold nodes for ever.
DEFAULT_MAX_TIME_MINUTES = 7 * MINUTES_PER_DAY


class HeadNodeConfig(StrictModel):
    instance_type: InstanceTypeName = "m7i.2xlarge"
    root_volume_gib: int = Field(default=200, ge=64, le=16384)


class LoginNodesConfig(StrictModel):
    count: int = Field(default=1, ge=0, le=10)
    instance_type: InstanceTypeName = "m7i.xlarge"
    root_volume_gib: int = Field(default=200, ge=64, le=16384)


class ComputeGroupConfig(StrictModel):
    name: GroupName = Field(description="Slurm partition and feature name: lower-case letters and digits.")
    instance_type: InstanceTypeName
    count: PositiveInt = Field(le=1024)
    capacity: Capacity = Field(default_factory=lambda: OnDemandCapacity(type="on-demand"))
    placement_group: Literal["auto"] | bool | str = Field(
        default="auto",
        description="auto: a new cluster placement group for on-demand groups, none for ODCR "
        "and Capacity Blocks. true forces a new one, false turns it off. ODCR: the name of the "
        "existing placement group the reservation was made in, or auto/false for none.",
    )
    efa: bool = Field(default=True, description="Attach every EFA interface the type has.")
    root_volume_gib: int = Field(default=512, ge=100, le=16384)
    default_time: int = Field(
        default=DEFAULT_TIME_MINUTES,
        description="Slurm DefaultTime of the group's partition: the limit of a job submitted "
        'without --time. Minutes, or a quoted Slurm time ("HH:MM:SS", "D-HH:MM").',
    )
    max_time: int | None = Field(
        default=None,
        description="Slurm MaxTime of the group's partition. Default: the block's duration for "
        "a Capacity Block (at most that), else 7 days.",
    )

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_GROUP_NAMES:
            raise fail(
                "name",
                f"'{value}' is reserved ('all' is the partition spanning every group; Slurm reads "
                "'default' as settings for other partitions); pick another name",
            )
        return value

    _slurm_time = field_validator("default_time", "max_time", mode="before")(slurm_minutes)

    @field_validator("placement_group", mode="before")
    @classmethod
    def _placement_choice(cls, value: object) -> object:
        # One clear message instead of one per member of the union.
        problem = placement_rules.choice_problem(value)
        if problem:
            raise fail("placement_group", problem)
        return value

    @model_validator(mode="after")
    def _catalog_rules(self) -> ComputeGroupConfig:
        catalog = load_catalog()
        if self.instance_type not in catalog:
            raise fail_at(
                "instance_type",
                f"{self.instance_type} is not in the GPU instance catalog; "
                f"choose one of: {', '.join(catalog.names())}",
            )
        info = catalog.get(self.instance_type)
        if self.efa and not info.efa_supported:
            raise fail_at("efa", f"{self.instance_type} has no EFA; set efa: false or pick an EFA type")
        problem = placement_rules.group_problem(self.capacity.type, self.placement_group)
        if problem:
            raise fail_at("placement_group", problem)
        if isinstance(self.capacity, CapacityBlockCapacity):
            if not info.capacity_block_supported:
                raise fail_at(
                    "capacity",
                    f"Capacity Blocks are not sold for {self.instance_type}; use type on-demand or odcr",
                )
            if self.count > max(CAPACITY_BLOCK_SIZES):
                raise fail_at(
                    "count",
                    f"{self.count} nodes exceed the largest Capacity Block (64); "
                    "split the nodes into several groups, one per block",
                )
        self._time_limits()
        return self

    def _time_limits(self) -> None:
        block = self.block_minutes
        if block is not None and self.max_time is not None and self.max_time > block:
            raise fail_at(
                "max_time",
                f"max_time {format_minutes(self.max_time)} is longer than the Capacity Block "
                f"({format_minutes(block)}); no job can run past the block's end",
            )
        if self.default_time > self.max_time_minutes:
            raise fail_at(
                "default_time",
                f"default_time {format_minutes(self.default_time)} exceeds max_time "
                f"{format_minutes(self.max_time_minutes)}; Slurm would reject every job "
                "submitted without --time",
            )

    @property
    def block_minutes(self) -> int | None:
        """A Capacity Block's length in minutes; None for other capacity."""
        if not isinstance(self.capacity, CapacityBlockCapacity):
            return None
        return int((self.capacity.end - self.capacity.start).total_seconds() // 60)

    @property
    def max_time_minutes(self) -> int:
        """The partition's MaxTime: as set, else the block's length, else 7 days."""
        if self.max_time is not None:
            return self.max_time
        block = self.block_minutes
        return block if block is not None else DEFAULT_MAX_TIME_MINUTES

    @property
    def instance(self) -> InstanceType:
        return load_catalog().get(self.instance_type)

    @property
    def is_capacity_block(self) -> bool:
        return isinstance(self.capacity, CapacityBlockCapacity)

    @property
    def existing_placement_group(self) -> str | None:
        """The placement group an ODCR was made in, launched into as is (never created)."""
        if isinstance(self.placement_group, str) and self.placement_group != "auto":
            return self.placement_group
        return None

    @property
    def creates_placement_group(self) -> bool:
        # An ODCR made in a cluster placement group serves launches into that group
        # only, and one made outside any group is not co-located: ODCR never gets a
        # new group (see placement_rules).
        if isinstance(self.capacity, OdcrCapacity):
            return False
        if self.placement_group == "auto":
            return not self.is_capacity_block
        return self.placement_group is True

    @property
    def uses_placement_group(self) -> bool:
        return self.creates_placement_group or self.existing_placement_group is not None

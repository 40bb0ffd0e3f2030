"""FSx for Lustre rules that CreateFileSystem enforces and CloudFormation only reports at deploy.

The rules are data: CAPACITY_RULES maps deployment type x throughput x EFA to the storage
capacities a file system may have, METADATA_IOPS says which deployment types take metadata
IOPS and which values. `problem` reads them for the model (config/storage.py), and README's
"FSx for Lustre rules" states the same tables (tests/config/test_fsx_rules.py compares the two).

Sources (checked Dec 2026):
- Capacity: FSx API reference, CreateFileSystem StorageCapacity,
  https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystem.html
  (SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 SSD: "1200 GiB, 2400 GiB, and increments of
  2400 GiB"; SCRATCH_1: "1200 GiB, 2400 GiB, and increments of 3600 GiB").
- Throughput: FSx for Lustre user guide, "Managing provisioned throughput capacity",
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/managing-throughput-capacity.html
  (PERSISTENT_1 SSD 50, 100, 200; PERSISTENT_2 SSD 125, 250, 500, 1000 MB/s/TiB).
- EFA-enabled capacity: user guide, "Increasing storage capacity",
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/increase-storage-capacity.html
  (multiples of 38400 / 19200 / 9600 / 4800 GiB for 125 / 250 / 500 / 1000 MB/s/TiB);
  EfaEnabled is PERSISTENT_2 only (CreateFileSystemLustreConfiguration).
- Growth: FSx API reference, UpdateFileSystem StorageCapacity,
  https://docs.aws.amazon.com/fsx/latest/APIReference/API_UpdateFileSystem.html
  ("For SCRATCH_2, PERSISTENT_1, and PERSISTENT_2 SSD deployment types, valid values are in
  multiples of 2400 GiB. The value must be greater than the current storage capacity." and
  "For SCRATCH_1 file systems, you can't increase the storage capacity."); EFA-enabled
  increments as for creation (user guide, "Increasing storage capacity" above).
- Metadata IOPS: FSx API reference, CreateFileSystemLustreMetadataConfiguration.Iops,
  https://docs.aws.amazon.com/fsx/latest/APIReference/API_CreateFileSystemLustreMetadataConfiguration.html
  ("For SSD file systems, valid values are 1500, 3000, 6000, 12000, and multiples of 12000
  up to a maximum of 192000"; the metadata configuration is PERSISTENT_2 only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple, get_args

DeploymentType = Literal["SCRATCH_1", "SCRATCH_2", "PERSISTENT_1", "PERSISTENT_2"]
DEPLOYMENT_TYPES: tuple[DeploymentType, ...] = get_args(DeploymentType)


@dataclass(frozen=True)
class CapacityRule:
    """The storage capacities of one deployment type at these throughputs, with or without EFA:
    each of `first_gib`, then any multiple of `step_gib`."""

    deployment_type: DeploymentType
    throughputs: tuple[int, ...]  # MB/s/TiB; () where the type has no throughput setting (SCRATCH)
    efa: bool
    first_gib: tuple[int, ...]
    step_gib: int

    def accepts(self, storage_gib: int) -> bool:
        return storage_gib in self.first_gib or (storage_gib > 0 and storage_gib % self.step_gib == 0)

    def sizes(self) -> str:
        """The capacities as README states them: "1200, 2400, then multiples of 2400"."""
        first = ", ".join(map(str, self.first_gib))
        return f"{first}, then multiples of {self.step_gib}" if first else f"multiples of {self.step_gib}"


# An EFA-enabled file system is built from servers of a fixed size per throughput tier,
# so its capacity grows in whole servers, not in the 2400 GiB steps of PERSISTENT_2.
CAPACITY_RULES: tuple[CapacityRule, ...] = (
    CapacityRule("SCRATCH_1", (), False, (1200, 2400), 3600),
    CapacityRule("SCRATCH_2", (), False, (1200, 2400), 2400),
    CapacityRule("PERSISTENT_1", (50, 100, 200), False, (1200, 2400), 2400),
    CapacityRule("PERSISTENT_2", (125, 250, 500, 1000), False, (1200, 2400), 2400),
    CapacityRule("PERSISTENT_2", (125,), True, (), 38400),
    CapacityRule("PERSISTENT_2", (250,), True, (), 19200),
    CapacityRule("PERSISTENT_2", (500,), True, (), 9600),
    CapacityRule("PERSISTENT_2", (1000,), True, (), 4800),
)


@dataclass(frozen=True)
class MetadataIopsRule:
    """Which deployment types take a metadata IOPS value, and which: each of `first`, then
    multiples of `step` up to `maximum`."""

    deployment_types: tuple[DeploymentType, ...]
    first: tuple[int, ...]
    step: int
    maximum: int

    def valid_values(self) -> tuple[int, ...]:
        """Every accepted value, smallest first (1500 ... 192000)."""
        return tuple(sorted(set(self.first) | set(range(self.step, self.maximum + 1, self.step))))


METADATA_IOPS = MetadataIopsRule(("PERSISTENT_2",), (1500, 3000, 6000, 12000), 12000, 192000)


class Problem(NamedTuple):
    field: str
    message: str


def base_rule(deployment_type: DeploymentType) -> CapacityRule:
    """The deployment type's row without EFA: its throughputs and its capacities."""
    return next(r for r in CAPACITY_RULES if r.deployment_type == deployment_type and not r.efa)


def efa_rules() -> tuple[CapacityRule, ...]:
    return tuple(r for r in CAPACITY_RULES if r.efa)


def problem(
    deployment_type: DeploymentType,
    throughput_per_tib: int | None,
    efa: bool,
    storage_gib: int,
    metadata_iops: int | None,
) -> Problem | None:
    """The first rule this file system breaks (the field and what to use), else None."""
    base = base_rule(deployment_type)
    if not base.accepts(storage_gib):
        hint = ", ".join(map(str, base.first_gib)) + f", or a multiple of {base.step_gib}"
        return Problem("storage_gib", f"{storage_gib} GiB is not a valid {deployment_type} size; use {hint}")
    found = _throughput_problem(base, throughput_per_tib)
    if found:
        return Problem("throughput_per_tib", found)
    efa_types = sorted({r.deployment_type for r in efa_rules()})
    if efa and deployment_type not in efa_types:
        return Problem("efa", f"EFA-enabled FSx for Lustre needs deployment_type {' or '.join(efa_types)}")
    if metadata_iops is not None:
        if deployment_type not in METADATA_IOPS.deployment_types:
            only = " or ".join(METADATA_IOPS.deployment_types)
            return Problem("metadata_iops", f"metadata_iops applies to {only} only; remove it")
        found = metadata_iops_problem(metadata_iops)
        if found:
            return Problem("metadata_iops", found)
    if efa:
        found = efa_capacity_problem(storage_gib, throughput_per_tib)
        if found:
            return Problem("storage_gib", found)
    return None


def _throughput_problem(base: CapacityRule, throughput_per_tib: int | None) -> str | None:
    if not base.throughputs:
        if throughput_per_tib is None:
            return None
        return f"{base.deployment_type} has no throughput setting; set throughput_per_tib: null"
    if throughput_per_tib in base.throughputs:
        return None
    return (
        f"{throughput_per_tib} is not offered for {base.deployment_type}; "
        f"use one of {', '.join(map(str, base.throughputs))}"
    )


def describe_storage() -> str:
    """The schema's description of storage_gib, from the table."""
    usual = base_rule("PERSISTENT_2")
    others = "; ".join(
        f"{r.deployment_type}: {r.sizes()}"
        for r in CAPACITY_RULES
        if not r.efa and r.sizes() != usual.sizes()
    )
    return f"{usual.sizes()}" + (f" ({others})" if others else "") + "; EFA-enabled: see efa."


def describe_throughput() -> str:
    bases = [base_rule(t) for t in DEPLOYMENT_TYPES]
    offered = ", ".join(
        f"{r.deployment_type} {'/'.join(map(str, r.throughputs))}" for r in bases if r.throughputs
    )
    none = ", ".join(r.deployment_type for r in bases if not r.throughputs)
    return f"MB/s per TiB; {offered}; null for {none}."


def describe_efa() -> str:
    rules = efa_rules()
    types = " or ".join(sorted({r.deployment_type for r in rules}))
    steps = "/".join(str(r.step_gib) for r in rules)
    tiers = "/".join(str(r.throughputs[0]) for r in rules)
    return (
        f"EFA-enabled file system ({types} only, set at creation); storage_gib in "
        f"multiples of {steps} for {tiers} MB/s/TiB."
    )


def describe_metadata_iops() -> str:
    rule = METADATA_IOPS
    return (
        f"{' or '.join(rule.deployment_types)} metadata IOPS: {', '.join(map(str, rule.first))}, then "
        f"multiples of {rule.step} to {rule.maximum}; null: automatic."
    )


def metadata_iops_valid_values() -> tuple[int, ...]:
    return METADATA_IOPS.valid_values()


def metadata_iops_problem(iops: int) -> str | None:
    values = METADATA_IOPS.valid_values()
    if iops in values:
        return None
    # 18000 is the typical mistake (a multiple of 6000 but not of 12000): name the neighbours.
    lower = max((v for v in values if v < iops), default=None)
    higher = min((v for v in values if v > iops), default=None)
    nearest = " or ".join(str(v) for v in (lower, higher) if v is not None)
    rule = METADATA_IOPS
    return (
        f"{iops} is not a metadata IOPS value FSx accepts; use {', '.join(map(str, rule.first))} or a "
        f"multiple of {rule.step} up to {rule.maximum} (nearest: {nearest}), or null for automatic"
    )


def growth_step(deployment_type: str, throughput_per_tib: int | None, efa: bool) -> int | None:
    """The increment storage grows by in place (UpdateFileSystem), or None where it cannot grow:
    SCRATCH_1, or a type this table does not know."""
    if deployment_type == "SCRATCH_1":
        return None
    rules = efa_rules() if efa else tuple(r for r in CAPACITY_RULES if not r.efa)
    rule = next(
        (
            r
            for r in rules
            if r.deployment_type == deployment_type and (not efa or throughput_per_tib in r.throughputs)
        ),
        None,
    )
    return rule.step_gib if rule else None


def efa_capacity_problem(storage_gib: int, throughput_per_tib: int | None) -> str | None:
    rules = efa_rules()
    rule = next((r for r in rules if throughput_per_tib in r.throughputs), None)
    if rule is None:
        offered = [str(t) for r in rules for t in r.throughputs]
        return (
            f"EFA-enabled FSx needs throughput_per_tib {', '.join(offered[:-1])} or {offered[-1]}, "
            f"not {throughput_per_tib}"
        )
    if rule.accepts(storage_gib):
        return None
    step = rule.step_gib
    lower = storage_gib // step * step
    options = " or ".join(str(v) for v in (lower, lower + step) if v > 0)
    steps = ", ".join(f"{r.throughputs[0]}: {r.step_gib}" for r in rules)
    return (
        f"{storage_gib} GiB is not a size an EFA-enabled file system at {throughput_per_tib} MB/s/TiB "
        f"can have; use a multiple of {step} GiB (e.g. {options}), or a higher throughput_per_tib "
        f"for smaller steps ({steps} GiB)"
    )

"""What a diff finds: per stack, each resource added, modified, replaced or removed,
and whether the change puts data or the head node at risk."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpucluster.diff.classify import BLOCK_GROUP_RISKY_UPDATES
from gpucluster.diff.property_rules import Refusal

# Retained and removed, these lose nothing the cluster reads back: logs are only written.
# Other data-holding types (file systems, the munge secret) are detached from the cluster.
ARCHIVE_TYPES = frozenset({"AWS::Logs::LogGroup"})


class ChangeKind(StrEnum):
    DELETED = "deleted"
    # Gone from the template, kept by DeletionPolicy: nothing is lost, but it lives on
    # outside any stack (and is billed) until removed by hand (README, Tearing down), and
    # a data-holding one is detached from the cluster, so it still needs --allow-replace.
    RETAINED = "removed from stack, retained in the account"
    REPLACED = "replaced"
    MODIFIED = "modified"
    ADDED = "added"


@dataclass(frozen=True)
class ResourceChange:
    stack: str
    logical_id: str
    resource_type: str
    kind: ChangeKind
    stateful: bool
    changed: tuple[str, ...] = ()
    replaced_by: tuple[str, ...] = ()
    may_replace: tuple[str, ...] = ()
    allowed: bool = False
    head_node: bool = False
    # The parameter that names the munge key's secret (classify.is_munge_key_pointer).
    munge_key: bool = False
    # An EKS cluster or node group: what replacing it stops (classify.eks_replacement).
    eks_replacement: str | None = None
    # An EKS node group on a Capacity Block (classify.is_capacity_block_group).
    block_group: bool = False
    # Updated in place, but in a way the service refuses (property_rules): the deploy fails.
    refusals: tuple[Refusal, ...] = ()

    @property
    def endangers_data(self) -> bool:
        """A data-holding resource would be (or may be) replaced, deleted or detached."""
        if self.kind == ChangeKind.RETAINED:
            return self.stateful and self.resource_type not in ARCHIVE_TYPES
        risky = self.kind in (ChangeKind.REPLACED, ChangeKind.DELETED) or bool(self.may_replace)
        return self.stateful and risky

    @property
    def replaces_head(self) -> bool:
        """The head node would be (or may be) replaced or deleted: slurmctld stops, a new
        head boots from the same EFS state; queued and running jobs survive the pause."""
        risky = self.kind in (ChangeKind.REPLACED, ChangeKind.DELETED) or bool(self.may_replace)
        return self.head_node and risky

    @property
    def replaces_eks(self) -> bool:
        """An EKS cluster or node group would be (or may be) replaced or deleted."""
        risky = self.kind in (ChangeKind.REPLACED, ChangeKind.DELETED) or bool(self.may_replace)
        return self.eks_replacement is not None and risky

    @property
    def updates_block_group(self) -> bool:
        """A Capacity Block node group updated in place in its size or launch template, which
        may drain a running block (classify.BLOCK_GROUP_UPDATE)."""
        return (
            self.block_group
            and self.kind == ChangeKind.MODIFIED
            and not self.replaces_eks
            and any(path.startswith(BLOCK_GROUP_RISKY_UPDATES) for path in self.changed)
        )

    @property
    def changes_munge_key(self) -> bool:
        """Nodes would read another munge key: those booted before the deploy keep the old one
        and cannot authenticate to those booted after, until every node re-runs its bootstrap."""
        return (
            self.munge_key
            and self.kind != ChangeKind.ADDED
            and any(path == "Value" or path.startswith("Value ") for path in self.changed)
        )

    @property
    def guarded(self) -> bool:
        """A change CI stops on unless allowed: data at risk, the head node replaced, an EKS
        cluster or node group replaced, a Capacity Block group's size or launch template
        updated, or a new munge key for the nodes."""
        return (
            self.endangers_data
            or self.replaces_head
            or self.replaces_eks
            or self.updates_block_group
            or self.changes_munge_key
        )

    @property
    def blocks(self) -> bool:
        return self.guarded and not self.allowed


@dataclass(frozen=True)
class StackDiff:
    name: str
    changes: tuple[ResourceChange, ...]

    def of_kind(self, kind: ChangeKind) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.kind == kind)


@dataclass(frozen=True)
class DiffReport:
    stacks: tuple[StackDiff, ...]
    unused_allowances: tuple[str, ...]

    @property
    def changes(self) -> tuple[ResourceChange, ...]:
        return tuple(c for stack in self.stacks for c in stack.changes)

    @property
    def blocking(self) -> tuple[ResourceChange, ...]:
        return tuple(c for c in self.changes if c.blocks)

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        return tuple(r for c in self.changes for r in c.refusals)

    @property
    def exit_code(self) -> int:
        """2 when the update cannot deploy at all (bad input: no allowance helps), 1 when it
        would lose data, replace the head node or an EKS cluster or node group, or update a
        Capacity Block node group's size or launch template, else 0."""
        if self.refusals:
            return 2
        return 1 if self.blocking else 0

    def change(self, stack: str, logical_id: str) -> ResourceChange | None:
        return next((c for c in self.changes if c.stack == stack and c.logical_id == logical_id), None)

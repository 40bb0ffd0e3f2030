"""Offline guard: what deploying freshly synthesized templates would do to a baseline.

Per stack, every resource is added, modified in place, replaced or deleted, the way
CloudFormation would see it: a logical ID that disappears is a deletion (a renamed
logical ID is a deletion plus an addition), a changed Type or a changed create-only
property is a replacement, and a resource whose create-only property refers to a
replaced resource, or to an attribute that moves on an in-place update (a launch
template's LatestVersionNumber), is replaced with it. The guard fails when a resource
that holds data, or the head node (a separate class: no data is lost, but running jobs
pause while the controller restarts), or an EKS cluster or node group would be replaced
or deleted, or a Capacity Block node group's size or launch template updated (which may drain
a running block), unless the user allowed that logical ID; it refuses a resource updated in place
in a way its service cannot apply (property_rules: a file system that would shrink, EFA turned on), since that
deploy fails and rolls back whatever is allowed.
"""

from __future__ import annotations

from gpucluster.diff.classify import (
    Assessment,
    assess,
    eks_replacement,
    is_capacity_block_group,
    is_head_node,
    is_munge_key_pointer,
    is_stateful,
)
from gpucluster.diff.normalize import normalize_template
from gpucluster.diff.property_rules import Refusal, refusals
from gpucluster.diff.replacements import StackState, follow_replacements
from gpucluster.diff.report import ChangeKind, DiffReport, ResourceChange, StackDiff
from gpucluster.diff.template_values import Template

# Deletion policies under which a resource that leaves its template stays in the account
# whole; Snapshot deletes the resource (only a snapshot remains), so it stays "deleted".
KEPT_ON_DELETE_POLICIES = frozenset({"Retain", "RetainExceptOnCreate"})


def _stack_state(name: str, baseline: Template | None, current: Template | None, region: str) -> StackState:
    before = normalize_template(baseline) if baseline else {}
    after = normalize_template(current) if current else {}
    old, new = before.get("Resources", {}), after.get("Resources", {})
    assessments = {
        logical_id: assess(old[logical_id], new[logical_id], region)
        for logical_id in sorted(old.keys() & new.keys())
    }
    replaced = {logical_id for logical_id, a in assessments.items() if a.replaced_by}
    return StackState(name, before, after, assessments, replaced)


def _refused(logical_id: str, a: Assessment) -> tuple[Refusal, ...]:
    """What the service refuses of an in-place update; a replacement is a new resource,
    to which the limits on changing an existing one do not apply."""
    if a.replaced_by:
        return ()
    before, after = a.before.get("Properties", {}), a.after.get("Properties", {})
    return tuple(refusals(logical_id, a.after.get("Type", ""), before, after))


def _stack_diff(state: StackState, allow: frozenset[str]) -> StackDiff:
    old, new = state.before.get("Resources", {}), state.after.get("Resources", {})

    def allowed(logical_id: str) -> bool:
        return logical_id in allow or f"{state.name}/{logical_id}" in allow

    changes: list[ResourceChange] = []
    for logical_id in sorted(old.keys() - new.keys()):
        resource = old[logical_id]
        kept = resource.get("DeletionPolicy") in KEPT_ON_DELETE_POLICIES
        changes.append(
            ResourceChange(
                state.name,
                logical_id,
                resource.get("Type", "?"),
                ChangeKind.RETAINED if kept else ChangeKind.DELETED,
                is_stateful(resource),
                allowed=allowed(logical_id),
                head_node=is_head_node(logical_id, resource),
                eks_replacement=eks_replacement(resource),
            )
        )
    for logical_id in sorted(new.keys() - old.keys()):
        resource = new[logical_id]
        changes.append(
            ResourceChange(
                state.name, logical_id, resource.get("Type", "?"), ChangeKind.ADDED, is_stateful(resource)
            )
        )
    for logical_id, a in state.assessments.items():
        if not (a.changed or a.replaced_by or a.may_replace):
            continue
        kind = ChangeKind.REPLACED if a.replaced_by else ChangeKind.MODIFIED
        stateful = is_stateful(a.before) or is_stateful(a.after)
        changes.append(
            ResourceChange(
                state.name,
                logical_id,
                a.after.get("Type", "?"),
                kind,
                stateful,
                changed=tuple(a.changed),
                replaced_by=tuple(a.replaced_by),
                may_replace=tuple(a.may_replace),
                allowed=allowed(logical_id),
                head_node=is_head_node(logical_id, a.before) or is_head_node(logical_id, a.after),
                munge_key=is_munge_key_pointer(a.after),
                eks_replacement=eks_replacement(a.before) or eks_replacement(a.after),
                block_group=is_capacity_block_group(a.before) or is_capacity_block_group(a.after),
                refusals=_refused(logical_id, a),
            )
        )
    order = list(ChangeKind)
    changes.sort(key=lambda c: (order.index(c.kind), c.logical_id))
    return StackDiff(state.name, tuple(changes))


def diff_templates(
    baseline: dict[str, Template],
    current: dict[str, Template],
    allow_replace: set[str] | frozenset[str] = frozenset(),
    region: str = "us-east-1",
) -> DiffReport:
    """Compare stacks by name; `allow_replace` holds `LogicalId` or `Stack/LogicalId`."""
    allow = frozenset(allow_replace)
    states = [
        _stack_state(name, baseline.get(name), current.get(name), region)
        for name in sorted(baseline.keys() | current.keys())
    ]
    follow_replacements(states, region)
    stacks = tuple(_stack_diff(state, allow) for state in states)
    used = {
        key
        for stack in stacks
        for c in stack.changes
        if c.guarded
        for key in (c.logical_id, f"{c.stack}/{c.logical_id}")
    }
    return DiffReport(stacks, tuple(sorted(allow - used)))

"""Following replacements: a replaced resource gets a new physical ID, and so does every
resource whose create-only property refers to it, in its own stack or in another one
through an export, or to an attribute that moves when its target is updated in place."""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpucluster.diff.classify import Assessment
from gpucluster.diff.resource_schemas import update_rules
from gpucluster.diff.template_values import (
    IMPORT_PREFIX,
    Template,
    Unresolved,
    attribute_references,
    property_name,
    references,
    value_at,
)

# Attributes whose value changes when the resource is updated in place: a launch template
# update makes a new version, so an instance pinned to GetAtt LatestVersionNumber sees a
# new LaunchTemplate/Version, which EC2 instances take only by replacement.
MOVING_ATTRIBUTES = {
    "AWS::EC2::LaunchTemplate": frozenset({"LatestVersionNumber", "DefaultVersionNumber"}),
}


@dataclass
class StackState:
    name: str
    before: Template
    after: Template
    assessments: dict[str, Assessment]
    replaced: set[str]

    def moved_attributes(self) -> set[tuple[str, str]]:
        """Attributes of resources updated in place whose value that update changes."""
        return {
            (logical_id, attribute)
            for logical_id, a in self.assessments.items()
            if a.changed and logical_id not in self.replaced
            for attribute in MOVING_ATTRIBUTES.get(a.after.get("Type", ""), ())
        }

    def changed_exports(self) -> set[str]:
        """Exports whose value moves: rewritten, or referring to a replaced resource."""
        old = self.before.get("Outputs", {})
        moved: set[str] = set()
        for key, output in self.after.get("Outputs", {}).items():
            export = output.get("Export", {}).get("Name")
            if not isinstance(export, str):
                continue
            rewritten = key in old and old[key].get("Value") != output.get("Value")
            if rewritten or references(output.get("Value")) & self.replaced:
                moved.add(IMPORT_PREFIX + export)
        return moved


def _describe_hits(hit: set[str]) -> str:
    return ", ".join(sorted(hit))


def follow_replacements(states: list[StackState], region: str) -> None:
    """A replaced resource gets a new physical ID, and so does every resource whose
    create-only property refers to it, also from another stack through an export."""
    progress = True
    while progress:
        progress = False
        moved_exports = set().union(*(state.changed_exports() for state in states))
        for state in states:
            frontier = state.replaced | moved_exports
            for logical_id, assessment in state.assessments.items():
                if logical_id in state.replaced:
                    continue
                props = assessment.after.get("Properties", {})
                moved = state.moved_attributes()
                for pointer in update_rules(assessment.after["Type"], region).create_only:
                    value = value_at(props, pointer)
                    if isinstance(value, Unresolved):
                        value = json.loads(value.canonical)
                    hit = references(value) & frontier
                    if hit:
                        assessment.replaced_by.append(
                            f"{property_name(pointer)} refers to {_describe_hits(hit)}, which is replaced"
                        )
                    for target, attribute in sorted(attribute_references(value) & moved):
                        assessment.replaced_by.append(
                            f"{property_name(pointer)} refers to {target}.{attribute}, which "
                            f"changes because {target} is updated"
                        )
                if assessment.replaced_by:
                    state.replaced.add(logical_id)
                    progress = True
    moved_exports = set().union(*(state.changed_exports() for state in states))
    for state in states:
        frontier = state.replaced | moved_exports
        moved = state.moved_attributes()
        for logical_id, assessment in state.assessments.items():
            props = assessment.after.get("Properties", {})
            for pointer in update_rules(assessment.after["Type"], region).conditional:
                hit = references(value_at(props, pointer)) & frontier
                if hit:
                    assessment.may_replace.append(
                        f"{property_name(pointer)} refers to replaced {_describe_hits(hit)}"
                    )
            for key, value in props.items():
                hit = references(value) & (frontier - {logical_id})
                if hit and key not in assessment.changed:
                    assessment.changed.append(f"{key} (refers to replaced {_describe_hits(hit)})")
                # An updatable property on a moving attribute (a node group's launch template
                # version) is updated too, though its template text is the same.
                for target, attribute in sorted(attribute_references(value) & moved):
                    if key not in assessment.changed:
                        assessment.changed.append(f"{key} (refers to {target}.{attribute}, which changes)")

"""Offline guard: what deploying freshly synthesized templates would do to a baseline.

Per stack, every resource is added, modified in place, replaced or deleted, the way
CloudFormation would see it: a logical ID that disappears is a deletion (a renamed
logical ID is a deletion plus an addition), a changed Type or a changed create-only
property is a replacement, and a resource whose create-only property refers to a
replaced resource, or to an attribute that moves on an in-place update (a launch
template's LatestVersionNumber), is replaced with it. The guard fails when a resource
that holds data, or the head node (a separate class: no data is lost, but running jobs
pause while the controller restarts), would be replaced or deleted, unless the user
allowed that logical ID.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from rich.console import Console

from gpucluster.names import HEAD_NODE_ID
from gpucluster.resource_schemas import DOCUMENTED_REPLACEMENTS, stateful_types, update_rules
from gpucluster.tables import print_table, table

Template = dict[str, Any]

TEMPLATE_SUFFIX = ".template.json"
RETAINING_POLICIES = frozenset({"Retain", "RetainExceptOnCreate", "Snapshot"})
# Deletion policies under which a resource that leaves its template stays in the account
# whole; Snapshot deletes the resource (only a snapshot remains), so it stays "deleted".
KEPT_ON_DELETE_POLICIES = frozenset({"Retain", "RetainExceptOnCreate"})
# Retained and removed, these lose nothing the cluster reads back: logs are only written.
# Other data-holding types (file systems, the munge secret) are detached from the cluster.
ARCHIVE_TYPES = frozenset({"AWS::Logs::LogGroup"})
CDK_METADATA_TYPE = "AWS::CDK::Metadata"
ASSET_HASH = "<asset-hash>"
# Resource attributes whose change CloudFormation applies; DependsOn only orders work.
RESOURCE_ATTRIBUTES = ("Condition", "DeletionPolicy", "UpdateReplacePolicy", "UpdatePolicy",
                       "CreationPolicy", "Metadata")
# cfn-init reads this at run time, so it is configuration, not bookkeeping.
KEPT_METADATA = "AWS::CloudFormation::Init"
# Attributes whose value changes when the resource is updated in place: a launch template
# update makes a new version, so an instance pinned to GetAtt LatestVersionNumber sees a
# new LaunchTemplate/Version, which EC2 instances take only by replacement.
MOVING_ATTRIBUTES = {
    "AWS::EC2::LaunchTemplate": frozenset({"LatestVersionNumber", "DefaultVersionNumber"}),
}
HEAD_NODE_TYPE = "AWS::EC2::Instance"
HEAD_REPLACEMENT = "head node will be replaced: running jobs pause, controller restarts"
CDK_ONLY_ENTRIES = {
    "Parameters": frozenset({"BootstrapVersion"}),
    "Rules": frozenset({"CheckBootstrapVersion"}),
    "Conditions": frozenset({"CDKMetadataAvailable"}),
}

# CDK names asset objects, container image tags and (legacy synthesizer) asset
# parameters after the sha256 of the asset; the hash moves whenever any byte of the
# asset does, so it is masked and only the values that reach resources are compared.
_ASSET_OBJECT = re.compile(r"\b[0-9a-f]{64}(?=\.(?:zip|json|tar\.gz|tgz|gz|jar)\b)")
_IMAGE_TAG = re.compile(r"(?<=:)[0-9a-f]{64}$")
_LEGACY_ASSET_PARAMETER = re.compile(
    r"AssetParameters[0-9a-f]{64}(S3Bucket|S3VersionKey|ArtifactHash)[0-9A-F]{8}"
)
# ${Name} or ${Name.Attribute} inside Fn::Sub; ${!Literal} is an escape, ${AWS::x} a pseudo.
_SUB_REFERENCE = re.compile(r"\$\{(?!!)([A-Za-z0-9]+)(?:\.[A-Za-z0-9.]+)?\}")


class BaselineError(ValueError):
    """The baseline directory cannot be read as a set of CloudFormation templates."""


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
    def guarded(self) -> bool:
        """A change CI stops on unless allowed: data at risk, or the head node replaced."""
        return self.endangers_data or self.replaces_head

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
    def exit_code(self) -> int:
        return 1 if self.blocking else 0

    def change(self, stack: str, logical_id: str) -> ResourceChange | None:
        return next(
            (c for c in self.changes if c.stack == stack and c.logical_id == logical_id), None
        )


# --- loading and normalizing ------------------------------------------------------


def load_templates(directory: str | Path) -> dict[str, Template]:
    """`<stack>.template.json` files of a cdk.out or snapshot directory, keyed by stack."""
    directory = Path(directory)
    hint = "pass a cdk.out directory or a snapshot directory of <stack>.template.json files"
    if not directory.is_dir():
        raise BaselineError(f"{directory}: not a directory; {hint}")
    files = sorted(directory.glob(f"*{TEMPLATE_SUFFIX}"))
    if not files:
        raise BaselineError(f"{directory}: holds no *{TEMPLATE_SUFFIX} file; {hint}")
    templates: dict[str, Template] = {}
    for path in files:
        try:
            templates[path.name[: -len(TEMPLATE_SUFFIX)]] = json.loads(path.read_text("utf-8"))
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"{path}: not valid JSON ({exc.msg}, line {exc.lineno}); "
                "regenerate the baseline with `gpucluster synth`"
            ) from None
    return templates


def normalize_template(template: Template) -> Template:
    """The template without what varies between identical deployments (asset hashes,
    CDK bookkeeping); sections left empty are dropped."""
    normalized: Template = {}
    for section, body in template.items():
        if section == "Resources":
            body = {
                logical_id: _without_bookkeeping(resource)
                for logical_id, resource in body.items()
                if resource.get("Type") != CDK_METADATA_TYPE
            }
        elif section in CDK_ONLY_ENTRIES:
            body = {k: v for k, v in body.items() if k not in CDK_ONLY_ENTRIES[section]}
        if body != {}:
            normalized[section] = body
    masked: Template = _mask_asset_hashes(normalized)
    return masked


def _without_bookkeeping(resource: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in resource.items() if k != "Metadata"}
    metadata = resource.get("Metadata")
    if isinstance(metadata, dict) and KEPT_METADATA in metadata:
        kept["Metadata"] = {KEPT_METADATA: metadata[KEPT_METADATA]}
    return kept


def _mask_asset_hashes(node: Any) -> Any:
    if isinstance(node, dict):
        return {_mask_string(k): _mask_asset_hashes(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_mask_asset_hashes(item) for item in node]
    if isinstance(node, str):
        return _mask_string(node)
    return node


def _mask_string(text: str) -> str:
    text = _ASSET_OBJECT.sub(ASSET_HASH, text)
    text = _IMAGE_TAG.sub(ASSET_HASH, text)
    return _LEGACY_ASSET_PARAMETER.sub(rf"AssetParameters{ASSET_HASH}\1", text)


# --- reading values out of templates ------------------------------------------------


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


MISSING = _Missing()


@dataclass(frozen=True)
class _Unresolved:
    """An intrinsic function met on the way down a pointer: only equality is known."""

    canonical: str


def _is_intrinsic(node: Any) -> bool:
    return isinstance(node, dict) and len(node) == 1 and (
        "Ref" in node or next(iter(node)).startswith("Fn::")
    )


def _value_at(properties: dict[str, Any], pointer: str) -> Any:
    """The value a `/properties/...` pointer selects; `*` fans out over list items."""
    segments = [s.replace("~1", "/").replace("~0", "~") for s in pointer.split("/")[2:]]
    return _walk(properties, segments)


def _walk(node: Any, segments: list[str]) -> Any:
    if node == {"Ref": "AWS::NoValue"}:
        return MISSING
    if not segments:
        return node
    if _is_intrinsic(node):
        return _Unresolved(json.dumps(node, sort_keys=True))
    head, rest = segments[0], segments[1:]
    if isinstance(node, list):
        tail = rest if head == "*" else segments
        return tuple(_walk(item, tail) for item in node)
    if isinstance(node, dict) and head in node:
        return _walk(node[head], rest)
    return MISSING


IMPORT_PREFIX = "export "


def _references(node: Any) -> set[str]:
    """What a value depends on: logical IDs (Ref, Fn::GetAtt, Fn::Sub) and, prefixed with
    IMPORT_PREFIX, the export names it reads through Fn::ImportValue."""
    if isinstance(node, list):
        return set().union(*(_references(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    for key, value in node.items():
        if key == "Ref" and isinstance(value, str) and not value.startswith("AWS::"):
            found.add(value)
        elif key == "Fn::GetAtt":
            target = value[0] if isinstance(value, list) else str(value).split(".", 1)[0]
            if isinstance(target, str):
                found.add(target)
        elif key == "Fn::Sub":
            text, variables = (value, {}) if isinstance(value, str) else (value[0], value[1])
            found |= {n for n in _SUB_REFERENCE.findall(text) if n not in variables}
            found |= _references(variables)
        elif key == "Fn::ImportValue" and isinstance(value, str):
            found.add(IMPORT_PREFIX + value)
        else:
            found |= _references(value)
    return found


def _changed_paths(before: Any, after: Any, prefix: str) -> list[str]:
    if before == after:
        return []
    if (
        isinstance(before, dict)
        and isinstance(after, dict)
        and not (_is_intrinsic(before) or _is_intrinsic(after))
    ):
        paths: list[str] = []
        for key in sorted(before.keys() | after.keys()):
            paths += _changed_paths(before.get(key, MISSING), after.get(key, MISSING),
                                    f"{prefix}/{key}" if prefix else key)
        return paths
    return [prefix]


def _property_name(pointer: str) -> str:
    return pointer.removeprefix("/properties/")


def _is_head_node(logical_id: str, resource: dict[str, Any]) -> bool:
    """The Cluster stack's only standalone instance; CDK starts its logical ID with the
    construct id (names.HEAD_NODE_ID), which is kept fixed for that reason."""
    return resource.get("Type") == HEAD_NODE_TYPE and logical_id.startswith(HEAD_NODE_ID)


def _moving_attributes(node: Any) -> set[tuple[str, str]]:
    """(logical id, attribute) of every Fn::GetAtt in a value."""
    if isinstance(node, list):
        return set().union(*(_moving_attributes(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[tuple[str, str]] = set()
    for key, value in node.items():
        if key == "Fn::GetAtt":
            parts = value if isinstance(value, list) else str(value).split(".", 1)
            if len(parts) == 2 and all(isinstance(p, str) for p in parts):
                found.add((parts[0], parts[1]))
        else:
            found |= _moving_attributes(value)
    return found


def _is_stateful(resource: dict[str, Any]) -> bool:
    policies = {resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")}
    return resource.get("Type") in stateful_types() or bool(policies & RETAINING_POLICIES)


# --- comparing -----------------------------------------------------------------------


@dataclass
class _Assessment:
    """One resource present on both sides; grows while replacements are followed."""

    before: dict[str, Any]
    after: dict[str, Any]
    changed: list[str]
    replaced_by: list[str]
    may_replace: list[str]


def _assess(before: dict[str, Any], after: dict[str, Any], region: str) -> _Assessment:
    old_type, new_type = before.get("Type"), after.get("Type")
    old_props, new_props = before.get("Properties", {}), after.get("Properties", {})
    changed = _changed_paths(old_props, new_props, "")
    for attribute in RESOURCE_ATTRIBUTES:
        changed += _changed_paths(before.get(attribute, MISSING), after.get(attribute, MISSING),
                                  attribute)
    assessment = _Assessment(before, after, changed, [], [])
    if old_type != new_type:
        assessment.replaced_by.append(f"Type {old_type} -> {new_type}")
        return assessment
    # A resource without a Type (a hand-edited baseline) has no schema: its update rules are unknown.
    resource_type: str = new_type or ""
    rules = update_rules(resource_type, region)
    documented = DOCUMENTED_REPLACEMENTS.get(resource_type, {})
    for pointer in rules.create_only:
        if _value_at(old_props, pointer) != _value_at(new_props, pointer):
            source = " (CloudFormation docs)" if pointer in documented else ""
            assessment.replaced_by.append(_property_name(pointer) + source)
    for pointer in rules.conditional:
        if _value_at(old_props, pointer) != _value_at(new_props, pointer):
            assessment.may_replace.append(_property_name(pointer))
    if changed and not rules.known:
        assessment.may_replace.append(f"no resource schema for {new_type}")
    return assessment


@dataclass
class _StackState:
    name: str
    before: Template
    after: Template
    assessments: dict[str, _Assessment]
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
            if rewritten or _references(output.get("Value")) & self.replaced:
                moved.add(IMPORT_PREFIX + export)
        return moved


def _describe_hits(hit: set[str]) -> str:
    return ", ".join(sorted(hit))


def _follow_replacements(states: list[_StackState], region: str) -> None:
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
                    value = _value_at(props, pointer)
                    if isinstance(value, _Unresolved):
                        value = json.loads(value.canonical)
                    hit = _references(value) & frontier
                    if hit:
                        assessment.replaced_by.append(
                            f"{_property_name(pointer)} refers to {_describe_hits(hit)}, which is replaced"
                        )
                    for target, attribute in sorted(_moving_attributes(value) & moved):
                        assessment.replaced_by.append(
                            f"{_property_name(pointer)} refers to {target}.{attribute}, which "
                            f"changes because {target} is updated"
                        )
                if assessment.replaced_by:
                    state.replaced.add(logical_id)
                    progress = True
    moved_exports = set().union(*(state.changed_exports() for state in states))
    for state in states:
        frontier = state.replaced | moved_exports
        for logical_id, assessment in state.assessments.items():
            props = assessment.after.get("Properties", {})
            for pointer in update_rules(assessment.after["Type"], region).conditional:
                hit = _references(_value_at(props, pointer)) & frontier
                if hit:
                    assessment.may_replace.append(
                        f"{_property_name(pointer)} refers to replaced {_describe_hits(hit)}"
                    )
            for key, value in props.items():
                hit = _references(value) & (frontier - {logical_id})
                if hit and key not in assessment.changed:
                    assessment.changed.append(f"{key} (refers to replaced {_describe_hits(hit)})")


def _stack_state(name: str, baseline: Template | None, current: Template | None, region: str) -> _StackState:
    before = normalize_template(baseline) if baseline else {}
    after = normalize_template(current) if current else {}
    old, new = before.get("Resources", {}), after.get("Resources", {})
    assessments = {
        logical_id: _assess(old[logical_id], new[logical_id], region)
        for logical_id in sorted(old.keys() & new.keys())
    }
    replaced = {logical_id for logical_id, a in assessments.items() if a.replaced_by}
    return _StackState(name, before, after, assessments, replaced)


def _stack_diff(state: _StackState, allow: frozenset[str]) -> StackDiff:
    old, new = state.before.get("Resources", {}), state.after.get("Resources", {})

    def allowed(logical_id: str) -> bool:
        return logical_id in allow or f"{state.name}/{logical_id}" in allow

    changes: list[ResourceChange] = []
    for logical_id in sorted(old.keys() - new.keys()):
        resource = old[logical_id]
        kept = resource.get("DeletionPolicy") in KEPT_ON_DELETE_POLICIES
        changes.append(ResourceChange(state.name, logical_id, resource.get("Type", "?"),
                                      ChangeKind.RETAINED if kept else ChangeKind.DELETED,
                                      _is_stateful(resource),
                                      allowed=allowed(logical_id),
                                      head_node=_is_head_node(logical_id, resource)))
    for logical_id in sorted(new.keys() - old.keys()):
        resource = new[logical_id]
        changes.append(ResourceChange(state.name, logical_id, resource.get("Type", "?"),
                                      ChangeKind.ADDED, _is_stateful(resource)))
    for logical_id, a in state.assessments.items():
        if not (a.changed or a.replaced_by or a.may_replace):
            continue
        kind = ChangeKind.REPLACED if a.replaced_by else ChangeKind.MODIFIED
        stateful = _is_stateful(a.before) or _is_stateful(a.after)
        changes.append(ResourceChange(
            state.name, logical_id, a.after.get("Type", "?"), kind, stateful,
            changed=tuple(a.changed), replaced_by=tuple(a.replaced_by),
            may_replace=tuple(a.may_replace), allowed=allowed(logical_id),
            head_node=_is_head_node(logical_id, a.before) or _is_head_node(logical_id, a.after),
        ))
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
    _follow_replacements(states, region)
    stacks = tuple(_stack_diff(state, allow) for state in states)
    used = {
        key
        for stack in stacks
        for c in stack.changes
        if c.guarded
        for key in (c.logical_id, f"{c.stack}/{c.logical_id}")
    }
    return DiffReport(stacks, tuple(sorted(allow - used)))


# --- presenting ----------------------------------------------------------------------

_KIND_STYLE = {
    ChangeKind.DELETED: "bold red",
    ChangeKind.RETAINED: "yellow",
    ChangeKind.REPLACED: "bold yellow",
    ChangeKind.MODIFIED: "cyan",
    ChangeKind.ADDED: "green",
}
_MAX_PATHS = 6


def _explain(change: ResourceChange) -> str:
    lines: list[str] = []
    if change.replaced_by:
        lines.append("replaced because: " + "; ".join(change.replaced_by))
    if change.may_replace:
        lines.append("may be replaced: " + "; ".join(change.may_replace))
    if change.kind == ChangeKind.MODIFIED and change.changed:
        shown = list(change.changed[:_MAX_PATHS])
        if len(change.changed) > _MAX_PATHS:
            shown.append(f"... {len(change.changed) - _MAX_PATHS} more")
        lines.append("changed: " + ", ".join(shown))
    return "\n".join(lines)


def _data_note(change: ResourceChange) -> str:
    if change.kind == ChangeKind.RETAINED:
        # Not "at risk": the data survives, but the cluster no longer uses it.
        state = "[bold red]detached[/]" if change.blocks else "allowed" if change.allowed else ""
        return ", ".join(filter(None, ["kept; delete by hand when unused", state]))
    if change.blocks:
        return "[bold red]DATA AT RISK[/]" if change.endangers_data else "[bold red]HEAD NODE[/]"
    if change.guarded:
        return "[yellow]allowed[/]"
    return "stateful" if change.stateful else ""


def print_report(report: DiffReport, console: Console) -> None:
    """Render `report` on a rich Console: one table per stack, then the verdict."""
    for stack in report.stacks:
        if not stack.changes:
            console.print(f"[dim]{stack.name}: no changes[/]")
            continue
        rows = [
            (f"[{_KIND_STYLE[change.kind]}]{change.kind}[/]", change.logical_id, change.resource_type,
             _explain(change), _data_note(change))
            for change in stack.changes
        ]
        columns = ("change", "logical id", "type", "why / what", "data")
        print_table(console, table(stack.name, columns, rows, show_lines=True))
    counts = {kind: sum(len(s.of_kind(kind)) for s in report.stacks) for kind in ChangeKind}
    console.print(", ".join(f"{counts[kind]} {kind}" for kind in ChangeKind))
    for name in report.unused_allowances:
        console.print(f"[yellow]--allow-replace {name}: no stateful resource or head node with "
                      "that logical id is replaced or deleted; check the spelling[/]")
    for change in report.blocking:
        if not change.endangers_data:
            console.print(
                f"[bold red]{change.stack}/{change.logical_id}: {HEAD_REPLACEMENT}.[/] No data is "
                "lost (controller state and /home are on EFS). If that is intended, re-run with "
                f"--allow-replace {change.logical_id}"
            )
            continue
        verb = "may be replaced" if change.kind == ChangeKind.MODIFIED else f"would be {change.kind}"
        console.print(
            f"[bold red]{change.stack}/{change.logical_id} ({change.resource_type}) holds data and "
            f"{verb}.[/] If that is intended, re-run with --allow-replace {change.logical_id}"
        )
    for line in verdict(report):
        console.print(line, soft_wrap=True)  # one line per resource, greppable in CI logs


def verdict(report: DiffReport) -> list[str]:
    """The closing lines: "safe" only when nothing guarded goes; an allowed change is named
    as what it is (the allowance lets CI pass, it does not keep the data or the controller)."""
    if report.blocking:
        return []
    allowed = [c for c in report.changes if c.guarded and c.allowed]
    if not allowed:
        return ["[green]safe: no resource that holds data is replaced or deleted[/]"]
    lines = [_allowed_line(c) for c in allowed]
    losing = sum(1 for c in allowed if c.endangers_data and c.kind != ChangeKind.RETAINED)
    if losing:
        lines.append(
            f"[yellow]not safe, but allowed: {losing} resource(s) holding data will be replaced or "
            "deleted as you allowed; nothing else that holds data is[/]"
        )
    return lines


def _allowed_line(change: ResourceChange) -> str:
    where = f"{change.stack}/{change.logical_id} ({change.resource_type})"
    if not change.endangers_data:
        return f"[bold yellow]allowed by --allow-replace: {where}: {HEAD_REPLACEMENT}[/]"
    if change.kind == ChangeKind.RETAINED:
        return (f"[bold yellow]allowed by --allow-replace: {where} leaves the stack and stays in the "
                "account; the cluster no longer uses its data[/]")
    fate = "MAY BE REPLACED" if change.kind == ChangeKind.MODIFIED else f"WILL BE {str(change.kind).upper()}"
    return f"[bold yellow]allowed by --allow-replace: {where} {fate}; its data is lost unless copied[/]"


def run_diff(config_path: str | Path, baseline_dir: str | Path, allow_replace: list[str] | set[str]) -> int:
    """`gpucluster diff`: synthesize CONFIG and compare it with the baseline directory.
    Exit 0 when safe, 1 when data is at risk or the head node would be replaced,
    2 when the inputs cannot be used."""
    import tempfile

    from gpucluster.bad_input import BadInput
    from gpucluster.loader import load_config
    from gpucluster.synth import synthesize

    # soft_wrap: each finding stays on one line in a CI log (tables size themselves).
    console = Console(soft_wrap=True)
    try:
        cfg = load_config(config_path)
        baseline = load_templates(baseline_dir)
    except BadInput as exc:
        for problem in exc.problems:
            console.print(f"{exc.source}: {problem}", markup=False)
        return 2
    except BaselineError as exc:
        console.print(str(exc), markup=False)
        return 2
    with tempfile.TemporaryDirectory(prefix="gpucluster-diff-") as outdir:
        result = synthesize(cfg, Path(outdir))
        current = dict(result.templates)
    report = diff_templates(baseline, current, set(allow_replace), region=cfg.region)
    print_report(report, console)
    return report.exit_code

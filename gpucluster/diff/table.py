"""The diff on a rich Console: one table per stack, the counts, then the verdict."""

from __future__ import annotations

from rich.console import Console

from gpucluster.diff.report import ChangeKind, DiffReport, ResourceChange
from gpucluster.diff.verdict import findings, verdict
from gpucluster.tables import print_table, table

_KIND_STYLE = {
    ChangeKind.DELETED: "bold red",
    ChangeKind.RETAINED: "yellow",
    ChangeKind.REPLACED: "bold yellow",
    ChangeKind.MODIFIED: "cyan",
    ChangeKind.ADDED: "green",
}
_MAX_PATHS = 6


def _explain(change: ResourceChange) -> str:
    lines = [f"cannot be applied: {refusal.problem}" for refusal in change.refusals]
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
    if change.refusals:
        return "[bold red]CANNOT UPDATE[/]"
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
            (
                f"[{_KIND_STYLE[change.kind]}]{change.kind}[/]",
                change.logical_id,
                change.resource_type,
                _explain(change),
                _data_note(change),
            )
            for change in stack.changes
        ]
        columns = ("change", "logical id", "type", "why / what", "data")
        print_table(console, table(stack.name, columns, rows, show_lines=True))
    counts = {kind: sum(len(s.of_kind(kind)) for s in report.stacks) for kind in ChangeKind}
    console.print(", ".join(f"{counts[kind]} {kind}" for kind in ChangeKind))
    for line in findings(report):
        console.print(line)
    for line in verdict(report):
        console.print(line, soft_wrap=True)  # one line per resource, greppable in CI logs

"""What the diff says after its tables: the allowances that matched nothing, each
change that stops CI and how to let it through, and the closing verdict."""

from __future__ import annotations

from gpucluster.diff.classify import BLOCK_GROUP_UPDATE
from gpucluster.diff.report import ChangeKind, DiffReport, ResourceChange

HEAD_REPLACEMENT = "head node will be replaced: running jobs pause, controller restarts"
MUNGE_KEY_CHANGE = (
    "the munge key changes: nodes booted before the deploy keep the old key and cannot "
    "authenticate to nodes booted after it (nor to a shared slurmdbd) until each has re-run its "
    "bootstrap"
)


def findings(report: DiffReport) -> list[str]:
    """Unused allowances (likely misspelt), then one line per blocking change."""
    lines = [
        f"[yellow]--allow-replace {name}: no stateful resource or head node with "
        "that logical id is replaced or deleted; check the spelling[/]"
        for name in report.unused_allowances
    ]
    for change in report.blocking:
        if change.changes_munge_key and not change.endangers_data:
            lines.append(
                f"[bold red]{change.stack}/{change.logical_id}: {MUNGE_KEY_CHANGE}.[/] Drain the "
                "cluster; after the deploy re-run the bootstrap on the head and login nodes and replace "
                "the compute nodes (README, Accounting). If that is intended, re-run with "
                f"--allow-replace {change.logical_id}"
            )
            continue
        if change.updates_block_group:
            lines.append(
                f"[bold red]{change.stack}/{change.logical_id}: {BLOCK_GROUP_UPDATE}.[/] Deploy it "
                "when no block of this group is running; if none is, re-run with "
                f"--allow-replace {change.logical_id}"
            )
            continue
        if change.replaces_eks and not change.endangers_data:
            lines.append(
                f"[bold red]{change.stack}/{change.logical_id}: {change.eks_replacement}.[/] If that is "
                f"intended, re-run with --allow-replace {change.logical_id}"
            )
            continue
        if not change.endangers_data:
            lines.append(
                f"[bold red]{change.stack}/{change.logical_id}: {HEAD_REPLACEMENT}.[/] No data is "
                "lost (controller state and /home are on EFS). If that is intended, re-run with "
                f"--allow-replace {change.logical_id}"
            )
            continue
        verb = "may be replaced" if change.kind == ChangeKind.MODIFIED else f"would be {change.kind}"
        lines.append(
            f"[bold red]{change.stack}/{change.logical_id} ({change.resource_type}) holds data and "
            f"{verb}.[/] If that is intended, re-run with --allow-replace {change.logical_id}"
        )
    return lines


def verdict(report: DiffReport) -> list[str]:
    """The closing lines: "safe" only when nothing guarded goes and everything can deploy;
    an allowed change is named as what it is (the allowance lets CI pass, it does not keep
    the data or the controller)."""
    if report.refusals:
        return [
            f"[bold red]not deployable: {len(report.refusals)} change(s) that CloudFormation would "
            "try in place and the service refuses; the stack update would fail and roll back[/]"
        ]
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
    if change.changes_munge_key and not change.endangers_data:
        return f"[bold yellow]allowed by --allow-replace: {where}: {MUNGE_KEY_CHANGE}[/]"
    if change.updates_block_group:
        return f"[bold yellow]allowed by --allow-replace: {where}: {BLOCK_GROUP_UPDATE}[/]"
    if change.replaces_eks and not change.endangers_data:
        return f"[bold yellow]allowed by --allow-replace: {where}: {change.eks_replacement}[/]"
    if not change.endangers_data:
        return f"[bold yellow]allowed by --allow-replace: {where}: {HEAD_REPLACEMENT}[/]"
    if change.kind == ChangeKind.RETAINED:
        return (
            f"[bold yellow]allowed by --allow-replace: {where} leaves the stack and stays in the "
            "account; the cluster no longer uses its data[/]"
        )
    fate = "MAY BE REPLACED" if change.kind == ChangeKind.MODIFIED else f"WILL BE {str(change.kind).upper()}"
    return f"[bold yellow]allowed by --allow-replace: {where} {fate}; its data is lost unless copied[/]"

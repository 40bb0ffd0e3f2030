"""The head's node report as `gpucluster nodes` prints it: a table, the last replacement of
each group, the alert if the bound tripped, and the exit code (1 when a node is out of service)."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.nodes.head_report import REPAIR_AGENT, agent_line
from gpucluster.nodes.report_shape import HeadReport
from gpucluster.tables import CliTable, table

COLUMNS = ("node", "group", "state", "reason", "instance", "replaced")
# Slurm state flags of a node that takes no jobs: drained, draining or down.
OUT_OF_SERVICE = frozenset({"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "NOT_RESPONDING"})


@dataclass(frozen=True)
class NodesView:
    table: CliTable
    notes: list[str]
    out_of_service: int

    @property
    def exit_code(self) -> int:
        return 1 if self.out_of_service else 0


def view(report: HeadReport, cluster: str) -> NodesView:
    replaced = {r.instance_id: r for r in report.replacements}
    rows, down = [], 0
    for node in sorted(report.nodes, key=lambda n: (n.group, n.name)):
        states = set(node.state.split("+"))
        down += bool(states & OUT_OF_SERVICE)
        done = replaced.get(node.instance_id)
        rows.append(
            (
                node.name,
                node.group,
                node.state,
                node.reason or "-",
                node.instance_id,
                done.at if done else "-",
            )
        )
    notes = []
    last = {replacement.group: replacement for replacement in report.replacements}
    for group, replacement in sorted(last.items()):
        notes.append(
            f"group {group}: last replacement {replacement.node} at {replacement.at} ({replacement.reason})"
        )
    tripped = report.tripped
    if tripped:
        notes.append(
            f"ALERT replacement stopped since {tripped.at}: {tripped.why}; fix the cause, then "
            f"clear it on the head node: {agent_line('sudo', 'python3', '-m', REPAIR_AGENT, '--clear-alert')}"
        )
    title = f"{cluster}: {len(rows)} compute nodes, {down} drained or down"
    return NodesView(table(title, COLUMNS, rows), notes, down)

"""GO or NO-GO for the efa-check job's output: one line per node (gpucluster.job_output).

A node's own checks (GPUs, EFA devices) name it; a failed fi_pingpong names a pair, and
which end is bad is gpucluster.gate.pairs' question.
"""

from __future__ import annotations

from gpucluster.gate.decide import Reason, Verdict
from gpucluster.gate.model import NodeCheck


def failed_pingpongs(checks: list[NodeCheck]) -> dict[tuple[str, str], int]:
    """Each pair whose fi_pingpong failed (names sorted), with the first line that says so."""
    pairs: dict[tuple[str, str], int] = {}
    for check in checks:
        for partner in check.result.pingpong_failed_with:
            first, second = sorted((check.result.node, partner))
            pairs.setdefault((first, second), check.line)
    return pairs


def decide_efa_checks(source: str, checks: list[NodeCheck]) -> Verdict:
    reasons = [
        Reason(
            code="efa-check-failed",
            text=f"{check.result.node}: {check.result.efa_devices} of {check.result.expected_efa_devices} "
            f"EFA devices, {check.result.gpus} GPUs: {check.result.reason} (line {check.line})",
            node_fault=True,
            nodes=(check.result.node,),
        )
        for check in checks
        if check.own_failed
    ]
    reasons += [
        Reason(
            code="efa-pingpong-failed",
            text=f"fi_pingpong over EFA between {first} and {second} failed (line {line})",
            node_fault=True,
            nodes=(first, second),
        )
        for (first, second), line in failed_pingpongs(checks).items()
    ]
    notes = []
    if len(checks) == 1 and checks[0].result.expected_efa_devices > 0:
        notes.append("one node: fi_pingpong had no partner; submit efa-check with --nodes=2 or more")
    return Verdict(
        label=f"{source} efa-check ({len(checks)} nodes)",
        source=source,
        line=checks[0].line,
        go=not reasons,
        reasons=tuple(reasons),
        notes=tuple(notes),
        efa_checks=tuple(checks),
    )

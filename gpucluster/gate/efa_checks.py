"""GO or NO-GO for the efa-check job's output: one line per node (gpucluster.gate.job_output)."""

from __future__ import annotations

from gpucluster.gate.decide import Reason, Verdict
from gpucluster.gate.model import NodeCheck


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
        if check.failed
    ]
    return Verdict(
        label=f"{source} efa-check ({len(checks)} nodes)",
        source=source,
        line=checks[0].line,
        go=not reasons,
        reasons=tuple(reasons),
        efa_checks=tuple(checks),
    )

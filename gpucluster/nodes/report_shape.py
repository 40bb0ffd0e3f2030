"""The head's node report as the workstation reads it (node_repair.py --report writes it):
checked whole before anything is shown, so a report of another shape (a head still running
an older bundle) is one clear problem, never a KeyError."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from gpucluster.env_problem import EnvironmentProblem


class _Shape(BaseModel):
    # Fields a newer head adds are read past; a missing or mistyped one is refused.
    model_config = ConfigDict(extra="ignore", frozen=True)


class ReportedNode(_Shape):
    name: str
    group: str
    instance_id: str
    state: str
    reason: str | None = None


class ReportedReplacement(_Shape):
    node: str
    group: str
    instance_id: str
    at: str
    reason: str


class ReportedTrip(_Shape):
    at: str
    why: str


class HeadReport(_Shape):
    nodes: list[ReportedNode] = []
    replacements: list[ReportedReplacement] = []
    tripped: ReportedTrip | None = None


def read_report(report: dict[str, Any], subject: str) -> HeadReport:
    try:
        return HeadReport.model_validate(report)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise EnvironmentProblem(
            subject,
            f"the head's node report has another shape ({where}: {first['msg']}); its bundle is "
            "older or newer than this gpucluster",
            "deploy the cluster with this gpucluster (`cdk deploy`) so the head runs its report, or "
            "use the gpucluster release that deployed it",
        ) from None

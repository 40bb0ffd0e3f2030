"""The compute groups of a cluster, as the Cluster stack publishes them in SSM.

Each group has one parameter (cluster_names.compute_group_parameter) holding JSON:

    {"group": "gpu", "asg_name": "...", "count": 2,
     "capacity_type": "capacity-block" | "on-demand" | "odcr",
     "reservation_id": "cr-..." or null, "instance_type": "p5.48xlarge"}

The block's dates are deliberately not here: blocks get extended, so the controller
reads them from EC2 on every run. Keys added later are ignored, so a newer stack does
not break an older head node.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gpucluster.agents.cluster_names import GROUP_NAME
from gpucluster.agents.cluster_names import compute_groups_path as groups_path

CAPACITY_TYPES = ("capacity-block", "on-demand", "odcr")
_GROUP_NAME = re.compile(f"^{GROUP_NAME}$")
_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")


class GroupDocumentError(ValueError):
    pass


@dataclass(frozen=True)
class ComputeGroup:
    group: str
    asg_name: str
    count: int
    capacity_type: str
    reservation_id: str | None
    instance_type: str

    @property
    def is_capacity_block(self) -> bool:
        return self.capacity_type == "capacity-block"


def _field(doc: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = doc.get(key)
    # bool is an int in Python; a count of `true` is still wrong.
    if not isinstance(value, kind) or isinstance(value, bool) or value == "":
        raise GroupDocumentError(f"{where}: field '{key}' must be a non-empty {kind.__name__}, got {value!r}")
    return value


def parse_group(parameter_name: str, text: str) -> ComputeGroup:
    where = f"SSM parameter {parameter_name}"
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise GroupDocumentError(f"{where}: not JSON ({err})") from err
    if not isinstance(doc, dict):
        raise GroupDocumentError(f"{where}: expected a JSON object, got {type(doc).__name__}")
    group = _field(doc, "group", str, where)
    if not _GROUP_NAME.match(group) or parameter_name.rsplit("/", 1)[-1] != group:
        raise GroupDocumentError(
            f"{where}: field 'group' is '{group}'; it must be the parameter's last path "
            "segment and a compute group name (lower-case letters and digits)"
        )
    count = _field(doc, "count", int, where)
    if count < 1:
        raise GroupDocumentError(f"{where}: field 'count' must be at least 1, got {count}")
    capacity_type = _field(doc, "capacity_type", str, where)
    if capacity_type not in CAPACITY_TYPES:
        raise GroupDocumentError(
            f"{where}: field 'capacity_type' is '{capacity_type}'; expected one of "
            f"{', '.join(CAPACITY_TYPES)}"
        )
    reservation_id = doc.get("reservation_id")
    if reservation_id is not None and (
        not isinstance(reservation_id, str) or not _RESERVATION_ID.match(reservation_id)
    ):
        raise GroupDocumentError(
            f"{where}: field 'reservation_id' must be null or cr- and 17 hex digits, got {reservation_id!r}"
        )
    if capacity_type in ("capacity-block", "odcr") and reservation_id is None:
        raise GroupDocumentError(f"{where}: capacity_type {capacity_type} needs a 'reservation_id'")
    return ComputeGroup(
        group=group,
        asg_name=_field(doc, "asg_name", str, where),
        count=count,
        capacity_type=capacity_type,
        reservation_id=reservation_id,
        instance_type=_field(doc, "instance_type", str, where),
    )


@dataclass(frozen=True)
class GroupDocuments:
    groups: list[ComputeGroup]
    problems: list[str]


def load_groups(ssm: Any, cluster: str) -> GroupDocuments:
    """Every group parameter of the cluster; a malformed one is reported, not fatal, so
    one bad document cannot stop the other groups from being scaled down on time."""
    groups, problems = [], []
    paginator = ssm.get_paginator("get_parameters_by_path")
    for page in paginator.paginate(Path=groups_path(cluster), Recursive=False):
        for parameter in page["Parameters"]:
            try:
                groups.append(parse_group(parameter["Name"], parameter["Value"]))
            except GroupDocumentError as err:
                problems.append(str(err))
    return GroupDocuments(sorted(groups, key=lambda g: g.group), problems)

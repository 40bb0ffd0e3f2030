"""What the EKS stack hands nodegroup_scaler: the Capacity Block node groups it sizes, as one
JSON setting in the function's environment, and its handler.

Standard library only, like repair_settings: the synth writes these, and importing
nodegroup_scaler itself would load the AWS SDK into every synth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

GROUPS_SETTING = "GPUCLUSTER_BLOCK_GROUPS"
# The function's package is what the handler's module imports, followed (gpucluster.agent_package).
HANDLER = "gpucluster.agents.nodegroup_scaler.handler"
_RESERVATION_ID = re.compile(r"^cr-[0-9a-f]{17}$")


class GroupsSettingError(ValueError):
    pass


@dataclass(frozen=True)
class BlockNodeGroup:
    group: str
    nodegroup: str
    count: int
    reservation_id: str


def groups_setting(groups: Sequence[BlockNodeGroup]) -> str:
    return json.dumps([asdict(group) for group in groups], sort_keys=True, separators=(",", ":"))


def parse_groups(text: str) -> list[BlockNodeGroup]:
    """The groups in GROUPS_SETTING; GroupsSettingError names what is wrong."""
    try:
        groups = [
            BlockNodeGroup(str(g["group"]), str(g["nodegroup"]), int(g["count"]), str(g["reservation_id"]))
            for g in json.loads(text)
        ]
    except (json.JSONDecodeError, TypeError, KeyError, ValueError) as err:
        raise GroupsSettingError(f"{GROUPS_SETTING} is not a list of groups: {err!r}") from err
    for group in groups:
        if group.count < 1 or not _RESERVATION_ID.match(group.reservation_id):
            raise GroupsSettingError(
                f"{GROUPS_SETTING}: group {group.group} has a bad count or reservation id"
            )
    return groups

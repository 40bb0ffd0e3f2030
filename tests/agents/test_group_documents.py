"""The SSM document each compute group publishes for the controller: checked field by
field with a message naming the field, tolerant of keys added later."""

from __future__ import annotations

import json

import pytest

from gpucluster.agents.compute_groups import GroupDocumentError, parse_group
from tests.agents.fakes import CLUSTER, block_group


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"capacity_type": "spot"}, "field 'capacity_type' is 'spot'"),
        ({"reservation_id": None}, "capacity-block needs a 'reservation_id'"),
        ({"reservation_id": "cr-123"}, "field 'reservation_id' must be null or cr-"),
        ({"group": "gpu"}, "last path segment"),
        ({"asg_name": ""}, "field 'asg_name' must be a non-empty str"),
        ({"count": True}, "field 'count' must be a non-empty int"),
        ({"count": 0}, "field 'count' must be at least 1"),
    ],
)
def test_group_documents_are_checked_field_by_field(change, message):
    with pytest.raises(GroupDocumentError, match=message):
        parse_group(f"/gpucluster/{CLUSTER}/compute/train", json.dumps({**block_group(), **change}))


def test_group_documents_tolerate_new_keys():
    group = parse_group(f"/gpucluster/{CLUSTER}/compute/train", json.dumps({**block_group(), "zone": "x"}))
    assert (group.group, group.count, group.is_capacity_block) == ("train", 2, True)

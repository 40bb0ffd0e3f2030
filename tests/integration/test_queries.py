"""The suite reads slurmctld's answers with production's parser: a drained node whose
free-text Reason holds `State=` keeps its real state, and an answer that is not exactly
one record is an error rather than a silent first line."""

from __future__ import annotations

import pytest

from tests.integration.host import HarnessError
from tests.integration.queries import node_states, one_record

# `scontrol -o show node` on slurmctld 22.05.8, with the reason the health check writes.
DRAINED = (
    "NodeName=gpu-i-0a1b2c3d4e5f60001 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 CPUTot=2 "
    "OS=Linux 6.8.0-1021-aws #23-Ubuntu SMP RealMemory=500 "
    "State=IDLE+DRAIN+DYNAMIC_NORM ThreadsPerCore=1 Partitions=gpu,all "
    "Reason=healthcheck: State=DOWN gpus=7 [root@2026-12-02T11:08:30]\n"
)


def test_a_state_inside_the_reason_does_not_hide_the_nodes_state():
    record = one_record(DRAINED)
    assert node_states(record) == {"IDLE", "DRAIN", "DYNAMIC_NORM"}
    assert record["State"] == "IDLE+DRAIN+DYNAMIC_NORM"


def test_a_node_that_misses_pings_is_not_responding():
    assert node_states({"State": "IDLE*"}) == {"IDLE", "NOT_RESPONDING"}


@pytest.mark.parametrize("answer", ["", "No nodes in the system\n", DRAINED + DRAINED])
def test_an_answer_that_is_not_one_record_is_an_error(answer):
    with pytest.raises(HarnessError, match="expected one scontrol record"):
        one_record(answer)

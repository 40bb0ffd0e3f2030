"""gpucluster.agents.accounts against a recording stand-in for sacctmgr: what it adds, what it
removes (only what it marked), and how it fails. The real-Slurm suite runs it against a real
slurmdbd (tests/integration/test_accounting.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gpucluster.agents.accounts import MARK, Account, DesiredState, Qos, SacctmgrError, apply
from gpucluster.agents.scontrol import CommandResult

STATE = DesiredState(
    cluster="demo",
    qos=(Qos(name="dev", max_gpus_per_user=8),),
    accounts=(Account("research", 3, ("dev",), "dev", ("alice",)),),
    default_accounts={"alice": "research"},
)


class FakeSacctmgr:
    """Answers `show` from fixed listings and records every other command."""

    def __init__(self, listings: dict[str, str], modify_output: str = "") -> None:
        self.listings = {"tres": "gres|gpu\n", **listings}
        self.modify_output = modify_output
        self.changes: list[tuple[str, ...]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        if tuple(argv[1:4]) == ("-n", "-P", "show"):
            return CommandResult(tuple(argv), 0, self.listings.get(argv[4], ""), "")
        self.changes.append(tuple(argv[2:]))
        if argv[2] == "modify" and self.modify_output:
            return CommandResult(tuple(argv), 1, self.modify_output, "")
        return CommandResult(tuple(argv), 0, "", "")


def test_a_new_database_gets_the_cluster_qos_account_and_user_marked_as_gpuclusters():
    sacctmgr = FakeSacctmgr({})
    apply(STATE, sacctmgr)
    assert ("add", "cluster", "demo") in sacctmgr.changes
    assert ("add", "qos", "dev", f"description={MARK}") in sacctmgr.changes
    assert (
        "modify", "qos", "where", "name=dev", "set", "priority=0", "maxwall=-1",
        "maxtresperuser=gres/gpu=8", "maxtresperjob=gres/gpu=-1", "maxjobsperuser=-1",
    ) in sacctmgr.changes  # fmt: skip
    assert (
        "add", "account", "research", "cluster=demo", f"organization={MARK}", f"description={MARK}",
        "fairshare=3", "qos=dev", "defaultqos=dev",
    ) in sacctmgr.changes  # fmt: skip
    assert ("add", "user", "alice", "account=research", "cluster=demo") in sacctmgr.changes
    assert not [change for change in sacctmgr.changes if change[0] == "delete"]


def test_only_what_gpucluster_made_is_removed_and_only_on_this_cluster():
    sacctmgr = FakeSacctmgr(
        {
            "cluster": "demo\n",
            "qos": f"normal|\ndev|{MARK}\nold|{MARK}\nhand-made|\n",
            "account": f"root|\nresearch|{MARK}\ngone|{MARK}\nby-hand|\n",
            "association": (
                "root|\nroot|root\nresearch|\nresearch|alice\nresearch|bob\ngone|\ngone|carol\nby-hand|\n"
            ),
        }
    )
    apply(STATE, sacctmgr)
    deletes = [change for change in sacctmgr.changes if change[0] == "delete"]
    assert deletes == [
        ("delete", "user", "where", "name=bob", "account=research", "cluster=demo"),
        ("delete", "account", "where", "name=gone", "cluster=demo"),
        ("delete", "qos", "where", "name=old"),
    ]
    assert ("add", "cluster", "demo") not in sacctmgr.changes


def test_a_modify_that_changes_nothing_is_not_a_failure():
    apply(STATE, FakeSacctmgr({}, modify_output="  Nothing modified\n"))


def test_qos_limits_before_slurmctld_registered_gres_gpu_say_what_to_do():
    sacctmgr = FakeSacctmgr({"tres": "cpu|\nmem|\n"})
    with pytest.raises(SacctmgrError, match="start slurmctld"):
        apply(STATE, sacctmgr)


def test_a_failing_command_stops_with_sacctmgrs_words():
    def refusing(argv: Sequence[str]) -> CommandResult:
        if "add" in argv:
            return CommandResult(tuple(argv), 1, "", "sacctmgr: error: Problem talking to the database")
        return FakeSacctmgr({})(argv)

    with pytest.raises(SacctmgrError, match="Problem talking to the database"):
        apply(STATE, refusing)


def test_the_desired_state_round_trips_through_json():
    assert DesiredState.from_json(STATE.to_json()) == STATE

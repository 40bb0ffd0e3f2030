"""Stale node cleanup: which dynamic nodes are deleted, judged from `scontrol -o` output
captured on slurmctld 22.05.8 here and from EC2 instance states (moto, or botocore's
Stubber where an exact call or a failure matters). scontrol goes through a recorder."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from gpucluster.agents import node_cleanup, runtime
from gpucluster.agents.scontrol import CommandResult
from gpucluster.resolved.node_layout import NODE_LAYOUT
from tests.agent_scripts import run_from_bundle_copy, systemd_unit

# `scontrol --future -o show nodes` on slurmctld 22.05.8: the maintenance placeholder
# and a dynamic node whose slurmd was killed (SlurmdTimeout passed).
REAL_LINES = (
    "NodeName=gpu-block-anchor CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=N/A "
    "AvailableFeatures=gpu ActiveFeatures=gpu Gres=(null) NodeAddr=gpu-block-anchor "
    "NodeHostName=gpu-block-anchor Port=1  RealMemory=1 AllocMem=0 FreeMem=N/A Sockets=1 Boards=1 "
    "State=FUTURE+DYNAMIC_NORM ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A "
    "Partitions=gpu  BootTime=None SlurmdStartTime=None LastBusyTime=Unknown "
    "CfgTRES=cpu=1,mem=1M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n"
    "NodeName=gpu-i-0ccccccccccccccc1 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 "
    "CPULoad=0.90 AvailableFeatures=gpu ActiveFeatures=gpu Gres=(null) NodeAddr=127.0.0.1 "
    "NodeHostName=vm Port=2 Version=22.05.8 OS=Linux 6.18.44-fc-v1098 #1 SMP PREEMPT_DYNAMIC @0  "
    "RealMemory=500 AllocMem=0 FreeMem=23112 Sockets=2 Boards=1 "
    "State=DOWN+DYNAMIC_NORM+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
    "MCS_label=N/A Partitions=gpu  BootTime=2026-12-02T10:43:07 SlurmdStartTime=2026-12-02T11:05:56 "
    "LastBusyTime=2026-12-02T11:06:44 CfgTRES=cpu=2,mem=500M,billing=2 AllocTRES= CapWatts=n/a "
    "CurrentWatts=0 AveWatts=0 ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
    "Reason=Not responding [root@2026-12-02T11:08:30]\n"
)


def node_line(name: str, state: str, reason: str = "") -> str:
    tail = f" Reason={reason}" if reason else ""
    return (
        f"NodeName={name} Arch=x86_64 CPUAlloc=0 CPUTot=192 AvailableFeatures=gpu,p5.48xlarge "
        f"OS=Linux 6.8.0-1021-aws #23-Ubuntu SMP RealMemory=1945600 State={state} "
        f"Partitions=gpu,all CfgTRES=cpu=192,mem=1900G,billing=192,gres/gpu=8 AllocTRES={tail}\n"
    )


class Recorder:
    """Plays slurmctld: prints `nodes` for the listing and refuses to delete `busy` nodes
    the way 22.05.8 does for a node inside an active reservation."""

    def __init__(self, nodes: str, busy: Sequence[str] = (), listing_fails: bool = False) -> None:
        self.nodes = nodes
        self.busy = set(busy)
        self.listing_fails = listing_fails
        self.calls: list[list[str]] = []

    @property
    def deleted(self) -> list[str]:
        return [call[2].removeprefix("nodename=") for call in self.calls if call[1] == "delete"]

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        self.calls.append(argv)
        if argv == ["scontrol", "--future", "-o", "show", "nodes"]:
            if self.listing_fails:
                return CommandResult(
                    tuple(argv), 1, "", "Unable to contact slurm controller (connect failure)"
                )
            return CommandResult(tuple(argv), 0, self.nodes, "")
        assert argv[:2] == ["scontrol", "delete"] and argv[2].startswith("nodename="), argv
        name = argv[2].removeprefix("nodename=")
        if name in self.busy:
            return CommandResult(
                tuple(argv),
                1,
                "",
                f"scontrol: error: failed to delete nodes {name}\n"
                f"delete_node nodename={name}: Requested nodes are busy",
            )
        return CommandResult(tuple(argv), 0, "", "")


def test_real_scontrol_lines_parse_and_the_placeholder_is_not_a_candidate():
    nodes = node_cleanup.parse_nodes(REAL_LINES)
    assert nodes == [
        node_cleanup.SlurmNode(
            "gpu-i-0ccccccccccccccc1",
            "i-0ccccccccccccccc1",
            frozenset({"DOWN", "DYNAMIC_NORM", "NOT_RESPONDING"}),
        )
    ]
    assert nodes[0].stale


def test_a_state_word_inside_a_reason_does_not_override_the_real_state():
    (node,) = node_cleanup.parse_nodes(
        node_line("gpu-i-0123456789abcdef0", "IDLE", reason="healthcheck: State=DOWN gpus=7")
    )
    assert node.states == frozenset({"IDLE"})
    assert not node.stale


def test_names_that_are_not_group_and_instance_are_ignored():
    text = "".join(
        node_line(name, "DOWN+NOT_RESPONDING")
        for name in ("head", "gpu-i-xyz", "GPU-i-0123456789abcdef0", "gpu-i-0123456789abcdef0-old")
    )
    assert node_cleanup.parse_nodes(text) == []
    assert node_cleanup.parse_nodes("No nodes in the system\n") == []


@pytest.mark.parametrize(
    ("instance_state", "slurm_states", "delete", "warn"),
    [
        ("terminated", {"DOWN", "NOT_RESPONDING"}, True, False),
        ("shutting-down", {"IDLE", "NOT_RESPONDING"}, True, False),
        (None, {"FUTURE", "DYNAMIC_NORM"}, True, False),
        ("terminated", {"IDLE"}, False, False),
        ("running", {"IDLE"}, False, False),
        ("running", {"DOWN", "NOT_RESPONDING"}, False, True),
        ("running", {"FUTURE"}, False, True),
        ("stopped", {"DOWN"}, False, True),
        ("pending", {"DOWN", "NOT_RESPONDING"}, False, True),
    ],
)
def test_only_gone_instances_of_stale_nodes_are_deleted(instance_state, slurm_states, delete, warn):
    node = node_cleanup.SlurmNode("gpu-i-0123456789abcdef0", "i-0123456789abcdef0", frozenset(slurm_states))
    verdict = node_cleanup.judge(node, instance_state)
    assert verdict.delete is delete
    # A stale node on a live instance is kept and reported: a slurmd died, not the instance.
    assert verdict.attention is warn


@pytest.fixture
def ec2():
    with mock_aws():
        yield boto3.client("ec2", region_name="us-east-2")


def _launch(ec2, count: int) -> list[str]:
    reply = ec2.run_instances(
        ImageId="ami-12c6146b", MinCount=count, MaxCount=count, InstanceType="p5.48xlarge"
    )
    return [instance["InstanceId"] for instance in reply["Instances"]]


def test_a_mixed_cluster_loses_exactly_its_dead_nodes(ec2, caplog):
    caplog.set_level(logging.DEBUG, logger="node-cleanup")
    healthy, dead_slurmd, gone, gone_busy, gone_not_down = _launch(ec2, 5)
    ec2.terminate_instances(InstanceIds=[gone, gone_busy, gone_not_down])
    never_seen = "i-0fedcba9876543210"
    slurm = Recorder(
        REAL_LINES.split("\n")[0]
        + "\n"
        + node_line(f"gpu-{healthy}", "IDLE")
        + node_line(f"gpu-{dead_slurmd}", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")
        + node_line(f"gpu-{gone}", "DOWN+DYNAMIC_NORM+NOT_RESPONDING", "Not responding [slurm@x]")
        + node_line(f"train-{gone_busy}", "DOWN+DYNAMIC_NORM+NOT_RESPONDING")
        + node_line(f"gpu-{gone_not_down}", "ALLOCATED+DYNAMIC_NORM")
        + node_line(f"gpu-{never_seen}", "FUTURE+DYNAMIC_NORM"),
        busy=[f"train-{gone_busy}"],
    )
    assert node_cleanup.run_once(ec2, slurm) == 0
    assert slurm.deleted == [f"gpu-{gone}", f"train-{gone_busy}", f"gpu-{never_seen}"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 2
    assert warnings[0].startswith(f"node gpu-{dead_slurmd}: Slurm DOWN")  # live instance, dead slurmd
    assert warnings[1].startswith(f"node train-{gone_busy} not deleted")
    assert "retrying next run" in warnings[1] and "Requested nodes are busy" in warnings[1]
    assert caplog.records[-1].getMessage() == "nodes=6 deleted=2 refused-by-slurm=1 kept=3"


def test_a_second_run_after_cleanup_deletes_nothing(ec2):
    (gone,) = _launch(ec2, 1)
    ec2.terminate_instances(InstanceIds=[gone])
    first = Recorder(node_line(f"gpu-{gone}", "DOWN+NOT_RESPONDING"))
    assert node_cleanup.run_once(ec2, first) == 0
    assert first.deleted == [f"gpu-{gone}"]
    second = Recorder("No nodes in the system\n")
    assert node_cleanup.run_once(ec2, second) == 0
    assert second.deleted == []


def _stubbed_ec2() -> tuple[object, Stubber]:
    client = boto3.client(
        "ec2", region_name="us-east-2", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    return client, Stubber(client)


def test_nothing_is_deleted_when_ec2_cannot_be_asked(caplog):
    client, stub = _stubbed_ec2()
    stub.add_client_error("describe_instances", "RequestLimitExceeded", "Request limit exceeded.")
    slurm = Recorder(node_line("gpu-i-0123456789abcdef0", "DOWN+NOT_RESPONDING"))
    with stub:
        assert node_cleanup.run_once(client, slurm) == 1
    assert slurm.deleted == []
    assert "nothing deleted" in caplog.records[-1].getMessage()


def test_nothing_is_asked_or_deleted_when_slurm_cannot_be_listed():
    client, stub = _stubbed_ec2()  # no response queued: any EC2 call would fail the test
    slurm = Recorder("", listing_fails=True)
    with stub:
        assert node_cleanup.run_once(client, slurm) == 1
    assert slurm.deleted == []


def test_instances_are_asked_about_in_batches_of_200():
    ids = [f"i-{n:017x}" for n in range(1, 202)]
    client, stub = _stubbed_ec2()
    for batch in (ids[:200], ids[200:]):
        stub.add_response(
            "describe_instances",
            {"Reservations": []},
            {"Filters": [{"Name": "instance-id", "Values": batch}]},
        )
    with stub:
        assert node_cleanup.instance_states(client, ids) == {}
        stub.assert_no_pending_responses()


def test_the_cleanup_runs_from_a_bundle_copy(tmp_path):
    result = run_from_bundle_copy(tmp_path, "gpucluster.agents.node_cleanup")
    assert result.returncode == 2
    assert "GPUCLUSTER_REGION is not set: pass --region" in result.stdout


def test_the_cleanup_units_run_the_bundled_agent_every_five_minutes():
    service = systemd_unit("gpucluster-node-cleanup.service")
    assert service["Service"]["Type"] == "oneshot"
    assert service["Service"]["EnvironmentFile"] == runtime.ENV_FILE
    assert service["Service"]["WorkingDirectory"] == NODE_LAYOUT.agents_dir
    assert service["Service"]["ExecStart"] == "/usr/bin/python3 -m gpucluster.agents.node_cleanup"
    assert "slurmctld.service" in service["Unit"]["After"].split()
    assert systemd_unit("gpucluster-node-cleanup.timer")["Timer"]["OnCalendar"] == "*-*-* *:0/5:30"

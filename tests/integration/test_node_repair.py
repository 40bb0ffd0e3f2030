"""node_repair against the real controller: a node the health check drains is replaced,
a node a person drained is left alone, more failures than the bound stop the agent with an
ALERT, and a training job on the failing node is requeued and ends, on the replacement,
with the weights of an uninterrupted run.

Auto Scaling is botocore's Stubber; the test plays the group: when the agent's terminate
call reaches it, the instance's slurmd and jobs die (ComputeNode.kill) and a new node with
a new instance id starts as the bootstrap starts one. EC2 answers DescribeInstances from
what the test did (a killed node's instance is terminated, every other one running).
Every scontrol and squeue call of the agent reaches the test's slurmctld.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from botocore.stub import Stubber

from gpucluster.agents import node_cleanup, node_repair
from gpucluster.agents.repair_decision import Policy
from tests.integration.cluster import ComputeNode, SlurmCluster
from tests.integration.queries import node_states
from tests.integration.test_head_agents import aws_client, scontrol_runner
from tests.integration.test_torchrun_job import DONE, _interrupted, _resumed, job, require, uninterrupted
from tests.slurm.conf_text import conf_line_of

pytestmark = pytest.mark.slurm

__all__ = ["job"]  # the torchrun job fixture, used by the training test below

TIMEOUT = 60
# Namespaces 1-6 are the session's and other tests'; replacements take the next ones, each
# its own (a namespace lives until the session ends).
# Namespaces live until the session ends, so replacements take indices no other file uses.
NAMESPACES = itertools.count(30)
GRACE = timedelta(minutes=10)


@dataclass
class FakeGroup:
    """The compute group's Auto Scaling group: a terminate call replaces the instance."""

    cluster: SlurmCluster
    autoscaling: Any = field(default_factory=lambda: aws_client("autoscaling"))
    ec2: Any = field(default_factory=lambda: aws_client("ec2"))
    terminated: list[str] = field(default_factory=list)
    started: list[ComputeNode] = field(default_factory=list)
    killed: list[ComputeNode] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.stub = Stubber(self.autoscaling)
        self.autoscaling.meta.events.register(
            "before-parameter-build.autoscaling.TerminateInstanceInAutoScalingGroup", self._seen
        )
        # Answered before any request is made, as the Stubber answers: from the test's own record.
        self.ec2.meta.events.register_first("before-call.ec2.DescribeInstances", self._describe)

    def _describe(self, **_: object) -> tuple[AWSResponse, dict[str, Any]]:
        instances = [
            {
                "InstanceId": name.removeprefix(f"{self.cluster.group.name}-"),
                "State": {"Name": "terminated" if node in self.killed else "running"},
            }
            for name, node in self.cluster.nodes.items()
        ]
        return AWSResponse("https://ec2.us-east-2.amazonaws.com/", 200, {}, None), {
            "Reservations": [{"Instances": instances}]
        }

    def _seen(self, params: dict[str, object], **_: object) -> None:
        self.terminated.append(str(params["InstanceId"]))

    def expect_terminate(self, instance_id: str) -> None:
        self.stub.add_response(
            "terminate_instance_in_auto_scaling_group",
            {
                "Activity": {
                    "ActivityId": f"activity-{instance_id}",
                    "AutoScalingGroupName": f"{self.cluster.cfg.name}-{self.cluster.group.name}",
                    "Cause": "terminated by a user request",
                    "StartTime": datetime.now(UTC),
                    "StatusCode": "InProgress",
                }
            },
            {"InstanceId": instance_id, "ShouldDecrementDesiredCapacity": False},
        )

    def run_agent(self, now: datetime, policy: Policy, state: Path, events: Path) -> int:
        """One run of the agent's timer; then the group does what Auto Scaling would."""
        before = len(self.terminated)
        with self.stub:
            code = node_repair.run_once(
                node_repair.Clients(ec2=self.ec2, autoscaling=self.autoscaling),
                scontrol_runner(self.cluster),
                now,
                policy,
                state,
                node_repair.Events(events),
            )
        self.stub.assert_no_pending_responses()
        for instance_id in self.terminated[before:]:
            self._replace(instance_id)
        return code

    def _replace(self, instance_id: str) -> None:
        old = next(node for node in self.cluster.nodes.values() if node.name.endswith(instance_id))
        old.kill()
        self.killed.append(old)
        index = next(NAMESPACES)
        new = self.cluster.add_node(index, f"i-0f1e2d3c4b5a6{index:04d}")
        new.start(conf_line_of(self.cluster.cfg, self.cluster.group))
        self.started.append(new)


@pytest.fixture
def group(cluster: SlurmCluster) -> Iterator[FakeGroup]:
    """The fake group; afterwards the session's own nodes are back, healthy, and the
    replacements are gone, as the next test expects."""
    fake = FakeGroup(cluster)
    try:
        yield fake
    finally:
        cluster.slurm("scancel", "--user=root", check=False)
        for name in cluster.nodes:
            (cluster.gpu_override_dir / name).unlink(missing_ok=True)
        for node in fake.started:
            node.kill()
            cluster.nodes.pop(node.name)
            cluster.slurm("scontrol", "delete", f"NodeName={node.name}", check=False)
        for name in list(cluster.nodes):
            if cluster.nodes[name] in fake.killed:
                cluster.slurm("scontrol", "delete", f"NodeName={name}", check=False)
                cluster.nodes[name].start(conf_line_of(cluster.cfg, cluster.group))
            else:
                cluster.slurm("scontrol", "update", f"NodeName={name}", "State=RESUME", check=False)
        for name in cluster.nodes:
            cluster.wait_node_state(name, lambda s: s >= {"IDLE"} and "DRAIN" not in s, "to be back", TIMEOUT)


def fail_health_check(cluster: SlurmCluster, name: str) -> float:
    """One GPU falls off the bus: the real health check drains the node. Returns when (time.time())."""
    (cluster.gpu_override_dir / name).write_text("7\n")
    cluster.wait_node_state(name, lambda s: "DRAIN" in s, "to be drained by the health check", TIMEOUT)
    return time.time()


def in_service(states: set[str]) -> bool:
    return bool(states & {"IDLE", "MIXED", "ALLOCATED"}) and not states & {"DRAIN", "DOWN", "NOT_RESPONDING"}


def test_a_node_the_health_check_drains_is_replaced_and_the_replacement_registers_idle(
    cluster: SlurmCluster, group: FakeGroup, tmp_path: Path
):
    sick = sorted(cluster.nodes)[0]
    instance_id = sick.removeprefix(f"{cluster.group.name}-")
    drained_at = fail_health_check(cluster, sick)
    group.expect_terminate(instance_id)
    assert group.run_agent(datetime.now(UTC), Policy(), tmp_path / "state.json", tmp_path / "events.log") == 0
    replacement = group.started[0].name
    cluster.wait_node_state(replacement, lambda s: "IDLE" in s and in_service(s), "to register IDLE", TIMEOUT)
    took = time.time() - drained_at
    print(
        f"\nnode_repair: drain of {sick} to replacement {replacement} IDLE: {took:.1f} s (no instance boot)"
    )

    old = cluster.node_info(sick)
    assert old is not None and f"replaced {instance_id} at " in old["Reason"], old
    assert old["Reason"].startswith("healthcheck: GPU count 7, want 8"), old
    events = (tmp_path / "events.log").read_text()
    assert f"REPLACED node={sick} group={cluster.group.name} instance={instance_id}" in events

    # The old record does not linger: once slurmctld marks it DOWN and EC2 says the instance is
    # gone, node_cleanup removes it; the replacement is kept (EC2 knows it running).
    cluster.wait_node_state(
        sick, lambda s: "DOWN" in s or "NOT_RESPONDING" in s, "to stop answering", TIMEOUT
    )
    ec2 = aws_client("ec2")
    living = [n.removeprefix(f"{cluster.group.name}-") for n in cluster.nodes if n != sick]
    with Stubber(ec2) as stub:
        instances = [{"InstanceId": iid, "State": {"Name": "running"}} for iid in living]
        stub.add_response("describe_instances", {"Reservations": [{"Instances": instances}]})
        assert node_cleanup.run_once(ec2, scontrol_runner(cluster)) == 0
    assert cluster.node_info(sick) is None
    assert in_service(node_states(cluster.node_info(replacement) or {"State": "GONE"}))


def test_a_node_a_person_drained_is_left_alone(cluster: SlurmCluster, group: FakeGroup, tmp_path: Path):
    name = sorted(cluster.nodes)[0]
    cluster.slurm("scontrol", "update", f"NodeName={name}", "State=DRAIN", "Reason=swapping a cable, ask bob")
    later = datetime.now(UTC) + timedelta(days=1)
    # No terminate call is queued: the Stubber fails the run if the agent makes one.
    assert (
        group.run_agent(later, Policy(grace=timedelta(0)), tmp_path / "state.json", tmp_path / "ev.log") == 0
    )
    info = cluster.node_info(name)
    assert info is not None and "DRAIN" in node_states(info)
    assert info["Reason"].startswith("swapping a cable, ask bob"), info
    assert group.terminated == []


def test_more_failures_than_the_bound_stop_the_agent_with_an_alert(
    cluster: SlurmCluster, group: FakeGroup, tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    caplog.set_level(logging.INFO, logger="node-repair")
    state, events = tmp_path / "state.json", tmp_path / "events.log"
    first, second = sorted(cluster.nodes)
    fail_health_check(cluster, first)
    fail_health_check(cluster, second)
    bound = Policy(max_per_hour=1)
    group.expect_terminate(first.removeprefix(f"{cluster.group.name}-"))
    now = datetime.now(UTC)
    assert group.run_agent(now, bound, state, events) == 0
    assert "ALERT node replacement stopped: 2 nodes failed and the bound allows 1" in caplog.text
    assert "--clear-alert" in caplog.text
    assert "ALERT" in events.read_text()

    # Hours later it still refuses: only a person clears the bound.
    assert group.run_agent(now + timedelta(hours=3), bound, state, events) == 0
    info = cluster.node_info(second)
    assert info is not None and "DRAIN" in node_states(info) and "replaced" not in info["Reason"]
    assert group.terminated == [first.removeprefix(f"{cluster.group.name}-")]

    assert node_repair.clear_alert(state, now + timedelta(hours=3), node_repair.Events(events)) == 0
    group.expect_terminate(second.removeprefix(f"{cluster.group.name}-"))
    assert group.run_agent(now + timedelta(hours=3, minutes=1), bound, state, events) == 0
    assert len(group.terminated) == 2


@pytest.mark.long("three training runs on CPU: uninterrupted, interrupted by the repair, resumed")
def test_a_job_on_the_failing_node_is_requeued_and_resumes_on_the_replacement(
    cluster: SlurmCluster, group: FakeGroup, job: Path, tmp_path: Path
):
    require("torch", "gpucluster.train")
    whole = uninterrupted(cluster, job)
    job_id, submit_dir = _interrupted(cluster, job, "repaired")
    sick = sorted(cluster.nodes)[0]
    instance_id = sick.removeprefix(f"{cluster.group.name}-")
    state, events = tmp_path / "state.json", tmp_path / "events.log"
    drained_at = datetime.now(UTC)
    fail_health_check(cluster, sick)
    assert cluster.job_info(job_id)["JobState"] == "RUNNING"

    # Inside the grace period the job keeps its node (no call is queued: none may be made).
    assert group.run_agent(drained_at + timedelta(minutes=1), Policy(grace=GRACE), state, events) == 0
    assert group.terminated == [] and cluster.job_info(job_id)["JobState"] == "RUNNING"

    # Past it, the agent requeues the job and has the instance replaced.
    group.expect_terminate(instance_id)
    assert group.run_agent(drained_at + GRACE + timedelta(minutes=1), Policy(grace=GRACE), state, events) == 0
    assert f"requeued jobs {job_id}" in events.read_text()
    out = _resumed(cluster, job_id, submit_dir)
    assert DONE.findall(out) == whole, out
    info = cluster.job_info(job_id)
    assert group.started[0].name in cluster.slurm("scontrol", "show", "hostnames", info["NodeList"]).stdout

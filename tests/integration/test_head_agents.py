"""The head node's timers against the real controller: the Capacity Block maintenance
reservation and the removal of nodes whose instance is gone. Only EC2 and Auto Scaling
are fakes (botocore's Stubber); every scontrol call reaches the test's slurmctld."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.stub import ANY, Stubber

from gpucluster.agents import capacity_controller, maintenance, node_cleanup
from gpucluster.agents.scontrol import CommandResult, Runner
from gpucluster.slurm import conf as slurm_conf
from tests.agents.fakes import Aws
from tests.integration.cluster import SlurmCluster
from tests.integration.queries import node_states

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 30
NODE_DOWN_TIMEOUT = 45
SPARE_NODE = (3, "i-0a1b2c3d4e5f60003")


def scontrol_runner(cluster: SlurmCluster) -> Runner:
    """The agents' Runner, pointed at the test cluster's configuration."""

    def run(argv: Sequence[str]) -> CommandResult:
        done = subprocess.run(
            cluster.install.command(argv), capture_output=True, text=True, env=cluster.env, timeout=60
        )
        return CommandResult(tuple(argv), done.returncode, done.stdout, done.stderr)

    return run


def aws_client(service: str):
    return boto3.client(
        service, region_name="us-east-2", aws_access_key_id="testing", aws_secret_access_key="testing"
    )


def test_capacity_block_reservation_holds_back_jobs_that_would_cross_it(cluster: SlurmCluster):
    """One pass of the Capacity Block controller, as its timer runs it, while the block is
    active and ends 90 minutes from now: the maintenance window opens in 30 minutes."""
    cfg, group = cluster.cfg, cluster.group
    block_id = group.capacity.reservation_id
    asg_name = f"{cfg.name}-{group.name}"
    now = datetime.now(UTC).replace(microsecond=0)
    grace = capacity_controller.DEFAULT_GRACE
    end = now + grace + timedelta(minutes=30)
    aws = Aws(cfg.name)
    aws.groups(
        {
            "group": group.name,
            "count": group.count,
            "capacity_type": "capacity-block",
            "reservation_id": block_id,
            "instance_type": group.instance_type,
            "asg_name": asg_name,
        }
    )
    aws.block(
        "active",
        now - timedelta(days=1),
        end,
        block_id=block_id,
        instance_type=group.instance_type,
        count=group.count,
    )
    aws.size(0, group.count, group.count, name=asg_name)  # full and staying so: no resize call
    reservation_name = maintenance.reservation_name(group.name)
    run = scontrol_runner(cluster)
    try:
        assert aws.run_with(run, now, grace) == 0
        reservation = cluster.show("reservation", reservation_name)
        assert "MAINT" in reservation["Flags"].split(",")
        reserved = cluster.slurm("scontrol", "show", "hostnames", reservation["Nodes"]).stdout.split()
        assert set(cluster.nodes) <= set(reserved), "every registered node of the group is in the window"

        crossing = cluster.submit(
            "--time=45",
            "--gpus-per-node=8",
            "--cpus-per-task=1",
            "--output=/dev/null",
            script="true\n",
        )
        short = cluster.submit(
            "--time=10",
            "--gpus-per-node=8",
            "--cpus-per-task=1",
            "--output=/dev/null",
            script="true\n",
        )
        assert cluster.wait_job_state(short, {"COMPLETED"}, JOB_TIMEOUT)
        held = cluster.job_info(crossing)
        assert held["JobState"] == "PENDING"
        assert held["Reason"] == "ReqNodeNotAvail,_Reserved_for_maintenance", held["Reason"]
    finally:
        cluster.slurm("scancel", "--user=root")
        cluster.slurm("scontrol", "delete", f"Reservation={reservation_name}", check=False)
        cluster.slurm(
            "scontrol", "delete", f"NodeName={maintenance.anchor_node_name(group.name)}", check=False
        )


def test_node_whose_instance_is_gone_is_removed(cluster: SlurmCluster):
    index, instance_id = SPARE_NODE
    spare = cluster.add_node(index, instance_id)
    spare.start(slurm_conf.slurmd_conf_line(cluster.cfg, cluster.group))
    cluster.wait_node_state(spare.name, lambda s: "IDLE" in s, "to register", JOB_TIMEOUT)
    living = {node.name.removeprefix(f"{cluster.group.name}-") for node in cluster.nodes.values()}
    living.discard(instance_id)
    ec2 = aws_client("ec2")
    stub = Stubber(ec2)

    def instances_are(states: dict[str, str]) -> None:
        instances = [{"InstanceId": iid, "State": {"Name": state}} for iid, state in states.items()]
        stub.add_response(
            "describe_instances", {"Reservations": [{"Instances": instances}]}, {"Filters": ANY}
        )

    run = scontrol_runner(cluster)
    try:
        spare.kill()
        # EC2 no longer knows the instance, but slurmctld has not noticed yet: kept.
        instances_are(dict.fromkeys(living, "running"))
        with stub:
            assert node_cleanup.run_once(ec2, run) == 0
        assert cluster.node_info(spare.name) is not None

        cluster.wait_node_state(spare.name, lambda s: "DOWN" in s, "to be DOWN", NODE_DOWN_TIMEOUT)
        instances_are(dict.fromkeys(living, "running"))
        with stub:
            assert node_cleanup.run_once(ec2, run) == 0
        assert cluster.node_info(spare.name) is None
        for name in cluster.nodes:
            if name != spare.name:
                info = cluster.node_info(name)
                assert info is not None and "IDLE" in node_states(info)
    finally:
        cluster.nodes.pop(spare.name)
        cluster.slurm("scontrol", "delete", f"NodeName={spare.name}", check=False)

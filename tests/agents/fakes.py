"""The Capacity Block controller's world, faked: a scontrol that answers as slurmctld
22.05.8 did on this machine (see gpucluster/agents/maintenance.py), and EC2, Auto Scaling
and SSM through botocore's Stubber, which fails on any call that was not queued."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
from botocore.stub import Stubber

from gpucluster.agents import capacity_controller as cc
from gpucluster.agents import maintenance
from gpucluster.agents.scontrol import CommandResult, Runner, parse_slurm_time, slurm_time

CLUSTER = "demo"
BLOCK_ID = "cr-01234567890abcdef"
ASG = "demo-cluster-train-asg"
START = datetime(2026, 12, 10, 11, 30, tzinfo=UTC)
END = datetime(2026, 12, 24, 11, 30, tzinfo=UTC)
GRACE = timedelta(minutes=60)
# How long before a block's end the controller scales in (capacity_controller's lead).
LEAD = timedelta(minutes=35)
RESERVATION = maintenance.reservation_name("train")
ANCHOR = "train-block-anchor"


class FakeSlurm:
    """Answers the scontrol commands the controller issues, as slurmctld 22.05.8 did
    here: a reservation on a partition without nodes is refused, a reservation that
    has begun cannot be moved nor a start moved into the past, FUTURE nodes show only
    with --future."""

    def __init__(self, now: datetime, reservations: dict[str, tuple[datetime, datetime]] | None = None):
        self.now = now
        self.nodes: dict[str, str] = {}  # node name -> partition (its feature)
        self.reservations = dict(reservations or {})
        self.created_with: dict[str, dict[str, str]] = {}
        self.calls: list[list[str]] = []
        self.down = False

    @property
    def mutations(self) -> list[list[str]]:
        return [call for call in self.calls if call[1] in ("create", "update", "delete")]

    def _ok(self, argv: list[str], stdout: str = "") -> CommandResult:
        return CommandResult(tuple(argv), 0, stdout, "")

    def _fail(self, argv: list[str], stderr: str) -> CommandResult:
        return CommandResult(tuple(argv), 1, "", stderr)

    def _active(self, name: str) -> bool:
        start, end = self.reservations[name]
        return start <= self.now < end

    def _show_reservation(self, argv: list[str], name: str) -> CommandResult:
        if name not in self.reservations:
            return self._fail(argv, f"Reservation {name} not found")
        start, end = self.reservations[name]
        state = "ACTIVE" if self._active(name) else "INACTIVE"
        return self._ok(
            argv,
            f"ReservationName={name} StartTime={slurm_time(start)} EndTime={slurm_time(end)} "
            f"Duration=01:00:00 Nodes={ANCHOR} NodeCnt=1 CoreCnt=1 Features=(null) "
            "PartitionName=train Flags=MAINT,IGNORE_JOBS,SPEC_NODES,PART_NODES TRES=cpu=1 "
            f"Users=root Groups=(null) Accounts=(null) Licenses=(null) State={state} "
            "BurstBuffer=(null) Watts=n/a MaxStartDelay=(null)\n",
        )

    def _create_reservation(self, argv: list[str], args: dict[str, str]) -> CommandResult:
        name = args["ReservationName"]
        if name in self.reservations:
            return self._fail(argv, "Error creating the reservation: Duplicate reservation name")
        if args["PartitionName"] not in self.nodes.values():
            return self._fail(argv, "Error creating the reservation: Invalid node name specified")
        self.reservations[name] = (parse_slurm_time(args["StartTime"]), parse_slurm_time(args["EndTime"]))
        self.created_with[name] = args
        return self._ok(argv, f"Reservation created: {name}\n")

    def _update_reservation(self, argv: list[str], args: dict[str, str]) -> CommandResult:
        name = args["Reservation"]
        if self._active(name):
            return self._fail(argv, "Error updating the reservation: Reservation already started")
        if parse_slurm_time(args["StartTime"]) <= self.now:
            return self._fail(argv, "Error updating the reservation: Invalid time specified")
        self.reservations[name] = (parse_slurm_time(args["StartTime"]), parse_slurm_time(args["EndTime"]))
        return self._ok(argv, "Reservation updated.\n")

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        self.calls.append(argv)
        assert argv[0] == "scontrol"
        if self.down:
            return self._fail(argv, "slurm_load_reservations error: Unable to contact slurm controller")
        args = dict(a.split("=", 1) for a in argv if "=" in a)
        match argv[1:]:
            case ["-o", "show", "reservation", name]:
                return self._show_reservation(argv, name)
            case ["--future", "-o", "show", "node", name]:
                if name not in self.nodes:
                    return self._fail(argv, f"Node {name} not found")
                return self._ok(argv, f"NodeName={name} CPUTot=1 State=FUTURE+DYNAMIC_NORM\n")
            case ["create", node_arg, *_] if node_arg.startswith("NodeName="):
                self.nodes[args["NodeName"]] = args["Feature"]
                return self._ok(argv)
            case ["create", "reservation", *_]:
                return self._create_reservation(argv, args)
            case ["update", *_]:
                return self._update_reservation(argv, args)
            case ["delete", _]:
                del self.reservations[args["Reservation"]]
                return self._ok(argv)
        raise AssertionError(f"the controller issued an unexpected command: {argv}")


class Aws:
    """The three clients the controller uses, each behind a Stubber: queue the answers
    and the calls expected, then `run` the controller once."""

    def __init__(self, cluster: str = CLUSTER) -> None:
        self.cluster = cluster
        keys = {
            "region_name": "us-east-2",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        self.clients = cc.Clients(
            ec2=boto3.client("ec2", **keys),
            autoscaling=boto3.client("autoscaling", **keys),
            ssm=boto3.client("ssm", **keys),
        )
        self.ec2 = Stubber(self.clients.ec2)
        self.asg = Stubber(self.clients.autoscaling)
        self.ssm = Stubber(self.clients.ssm)

    def groups(self, *docs: dict[str, Any]) -> None:
        parameters = [
            {
                "Name": f"/gpucluster/{self.cluster}/compute/{doc['group']}",
                "Value": json.dumps(doc),
                "Type": "String",
            }
            for doc in docs
        ]
        self.ssm.add_response(
            "get_parameters_by_path",
            {"Parameters": parameters},
            {"Path": f"/gpucluster/{self.cluster}/compute", "Recursive": False},
        )

    def block(
        self,
        state: str,
        start: datetime = START,
        end: datetime = END,
        *,
        block_id: str = BLOCK_ID,
        instance_type: str = "p5.48xlarge",
        count: int = 2,
    ) -> None:
        self.ec2.add_response(
            "describe_capacity_reservations",
            {
                "CapacityReservations": [
                    {
                        "CapacityReservationId": block_id,
                        "InstanceType": instance_type,
                        "ReservationType": "capacity-block",
                        "State": state,
                        "StartDate": start,
                        "EndDate": end,
                        "TotalInstanceCount": count,
                    }
                ]
            },
            {"CapacityReservationIds": [block_id]},
        )

    def size(self, min_size: int, max_size: int, desired: int, name: str = ASG) -> None:
        self.asg.add_response(
            "describe_auto_scaling_groups",
            {
                "AutoScalingGroups": [
                    {
                        "AutoScalingGroupName": name,
                        "MinSize": min_size,
                        "MaxSize": max_size,
                        "DesiredCapacity": desired,
                        "DefaultCooldown": 300,
                        "AvailabilityZones": ["us-east-2a"],
                        "HealthCheckType": "EC2",
                        "CreatedTime": START - timedelta(days=30),
                    }
                ]
            },
            {"AutoScalingGroupNames": [name]},
        )

    def expect_set(self, desired: int, name: str = ASG) -> None:
        self.asg.add_response(
            "set_desired_capacity",
            {},
            {"AutoScalingGroupName": name, "DesiredCapacity": desired, "HonorCooldown": False},
        )

    def expect_update(self, min_size: int, max_size: int, desired: int) -> None:
        self.asg.add_response(
            "update_auto_scaling_group",
            {},
            {
                "AutoScalingGroupName": ASG,
                "MinSize": min_size,
                "MaxSize": max_size,
                "DesiredCapacity": desired,
            },
        )

    def run(self, slurm: FakeSlurm, grace: timedelta = GRACE) -> int:
        return self.run_with(slurm, slurm.now, grace)

    def run_with(
        self, runner: Runner, now: datetime, grace: timedelta = GRACE, metrics_dir: str | None = None
    ) -> int:
        """One controller pass at `now` with scontrol behind `runner` (a fake or the real one)."""
        with self.ec2, self.asg, self.ssm:
            code = cc.run_once(self.cluster, self.clients, runner, now, grace, metrics_dir)
            # Every queued response was consumed: no expected call was skipped.
            self.ec2.assert_no_pending_responses()
            self.asg.assert_no_pending_responses()
            self.ssm.assert_no_pending_responses()
        return code


def block_group(count: int = 2) -> dict[str, Any]:
    """The SSM document of a Capacity Block group named train."""
    return {
        "group": "train",
        "asg_name": ASG,
        "count": count,
        "capacity_type": "capacity-block",
        "reservation_id": BLOCK_ID,
        "instance_type": "p5.48xlarge",
    }

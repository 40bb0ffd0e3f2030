"""node_repair's run: what it reads from scontrol, the calls it makes (requeue, Auto Scaling,
the reason note) and in which order, its record and events, the alert and its clearing,
the report `gpucluster nodes` reads, and its systemd units."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.agents import node_repair, repair_decision, repair_settings, repair_slurm, repair_state
from gpucluster.agents.repair_decision import Policy, RepairState, Replacement, Trip
from gpucluster.agents.scontrol import CommandResult, slurm_time
from gpucluster.bootstrap.node_logs import shipped_files
from gpucluster.nodes.head_report import OUTPUT_LIMIT
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.site import SlurmSite
from tests.agent_scripts import run_from_bundle_copy, systemd_unit

NOW = datetime(2026, 12, 4, 21, 0, tzinfo=UTC)
SICK = "i-0123456789abcdef0"
BUSY = "i-0123456789abcdef1"


def line(instance_id: str, state: str, reason: str = "", at: datetime = NOW, tail: str = "") -> str:
    text = f"NodeName=gpu-{instance_id} Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State={state} Partitions=gpu"
    if reason:
        text += f" Reason={reason} [root@{slurm_time(at)}]"
    return text + tail


class FakeSlurm:
    def __init__(self, nodes: str, jobs: dict[str, str] | None = None) -> None:
        self.nodes = nodes
        self.jobs = jobs or {}
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        argv = list(argv)
        self.calls.append(argv)
        if argv[:2] == ["scontrol", "--future"]:
            return CommandResult(tuple(argv), 0, self.nodes, "")
        if argv[0] == "squeue":
            node = argv[2].removeprefix("--nodelist=")
            return CommandResult(tuple(argv), 0, self.jobs.get(node, ""), "")
        return CommandResult(tuple(argv), 0, "", "")


def _client(service: str) -> Any:
    return boto3.client(service, region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")  # type: ignore[call-overload]


class FakeAws:
    """EC2 and Auto Scaling behind Stubbers: every call a test did not queue fails the run."""

    def __init__(self) -> None:
        self.clients = node_repair.Clients(ec2=_client("ec2"), autoscaling=_client("autoscaling"))
        self.ec2, self.asg = Stubber(self.clients.ec2), Stubber(self.clients.autoscaling)

    def instances(self, running: Sequence[str] = (), terminated: Sequence[str] = ()) -> None:
        listed = [{"InstanceId": i, "State": {"Name": "running"}} for i in running]
        listed += [{"InstanceId": i, "State": {"Name": "terminated"}} for i in terminated]
        self.ec2.add_response("describe_instances", {"Reservations": [{"Instances": listed}]})

    def terminate_ok(self, instance_id: str) -> None:
        self.asg.add_response(
            "terminate_instance_in_auto_scaling_group",
            {},
            {"InstanceId": instance_id, "ShouldDecrementDesiredCapacity": False},
        )

    def __enter__(self) -> FakeAws:
        self.ec2.activate()
        self.asg.activate()
        return self

    def __exit__(self, *_: object) -> None:
        self.ec2.deactivate()
        self.asg.deactivate()

    def check(self) -> None:
        self.ec2.assert_no_pending_responses()
        self.asg.assert_no_pending_responses()


def test_reasons_and_their_times_are_read_whatever_follows_them():
    text = "\n".join(
        [
            line(
                SICK,
                "IDLE+DRAIN+DYNAMIC_NORM",
                "healthcheck: GPU count 7, want 8;fi_info hung",
                tail=" ReservationName=gpu-capacity-block-end",
            ),
            line(BUSY, "MIXED+DYNAMIC_NORM"),
            "NodeName=gpu-block-anchor State=FUTURE+DYNAMIC_NORM",
        ]
    )
    sick, busy = repair_slurm.parse_nodes(text)
    assert (sick.group, sick.instance_id) == ("gpu", SICK)
    assert sick.reason == "healthcheck: GPU count 7, want 8;fi_info hung"
    assert sick.reason_time == NOW and sick.states == {"IDLE", "DRAIN", "DYNAMIC_NORM"}
    assert (busy.reason, busy.reason_time, busy.busy) == ("", None, True)


def test_a_failed_node_is_requeued_replaced_noted_and_recorded(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="node-repair")
    slurm = FakeSlurm(
        "\n".join(
            [
                line(SICK, "IDLE+DRAIN", "healthcheck: GPU count 7, want 8"),
                line(BUSY, "MIXED+DRAIN", "dcgm: diag level 2 failed", at=NOW - timedelta(minutes=11)),
            ]
        ),
        jobs={f"gpu-{BUSY}": "41\n42\n"},
    )
    aws = FakeAws()
    aws.instances(running=[SICK, BUSY])
    aws.terminate_ok(BUSY)  # the older failure first
    aws.terminate_ok(SICK)
    state, events = tmp_path / "state.json", tmp_path / "events.log"
    with aws:
        assert node_repair.run_once(aws.clients, slurm, NOW, Policy(), state, node_repair.Events(events)) == 0
    aws.check()
    busy_calls = [c for c in slurm.calls if f"gpu-{BUSY}" in " ".join(c) or c[1:2] == ["requeue"]]
    assert busy_calls == [
        ["squeue", "--noheader", f"--nodelist=gpu-{BUSY}", "--format=%A"],
        ["scontrol", "requeue", "41"],
        ["scontrol", "requeue", "42"],
        [
            "scontrol",
            "update",
            f"NodeName=gpu-{BUSY}",
            f"Reason=dcgm: diag level 2 failed; replaced {BUSY} at 2026-12-04T21:00:00Z",
        ],
    ]
    assert ["squeue", "--noheader", f"--nodelist=gpu-{SICK}", "--format=%A"] not in slurm.calls
    record = repair_state.load(state)
    assert [r.instance_id for r in record.replacements] == [BUSY, SICK]
    written = events.read_text()
    assert f"REPLACED node=gpu-{BUSY} group=gpu instance={BUSY}: requeued jobs 41,42;" in written
    assert written.startswith("2026-12-04T21:00:00Z WARNING REPLACED")

    # The next run finds them replaced and leaves them, asking nothing of AWS (nothing is queued).
    with aws:
        assert (
            node_repair.run_once(
                aws.clients, slurm, NOW + timedelta(minutes=1), Policy(), state, node_repair.Events(events)
            )
            == 0
        )


def test_a_refused_terminate_is_not_recorded_and_retried(tmp_path):
    slurm = FakeSlurm(line(SICK, "IDLE+DRAIN", "prolog: nvidia-smi hung"))
    aws = FakeAws()
    aws.asg.add_client_error(
        "terminate_instance_in_auto_scaling_group", "ValidationError", "Instance Id not found"
    )
    aws.instances(running=[SICK])
    state = tmp_path / "state.json"
    with aws:
        assert node_repair.run_once(aws.clients, slurm, NOW, Policy(), state, node_repair.Events(None)) == 1
    assert repair_state.load(state).replacements == ()
    assert not any(call[:2] == ["scontrol", "update"] for call in slurm.calls)
    aws.instances(running=[SICK])
    aws.terminate_ok(SICK)
    with aws:
        assert node_repair.run_once(aws.clients, slurm, NOW, Policy(), state, node_repair.Events(None)) == 0
    assert [r.instance_id for r in repair_state.load(state).replacements] == [SICK]


class Killed(BaseException):
    """systemd ending the run at TimeoutStartSec."""


def test_a_replacement_is_kept_when_the_run_is_killed_right_after_it(tmp_path):
    slurm = FakeSlurm(line(SICK, "IDLE+DRAIN", "prolog: nvidia-smi hung"))

    def hangs_on_the_note(argv: Sequence[str]) -> CommandResult:
        if list(argv[:2]) == ["scontrol", "update"]:
            raise Killed
        return slurm(argv)

    aws = FakeAws()
    aws.instances(running=[SICK])
    aws.terminate_ok(SICK)
    state = tmp_path / "state.json"
    with aws, pytest.raises(Killed):
        node_repair.run_once(aws.clients, hangs_on_the_note, NOW, Policy(), state, node_repair.Events(None))
    assert [r.instance_id for r in repair_state.load(state).replacements] == [SICK]


def test_an_unreadable_record_stops_the_agent_before_any_call(tmp_path, caplog):
    state = tmp_path / "state.json"
    state.write_text("{not json")
    slurm = FakeSlurm(line(SICK, "IDLE+DRAIN", "healthcheck: x"))
    aws = FakeAws()
    with aws:
        assert node_repair.run_once(aws.clients, slurm, NOW, Policy(), state, node_repair.Events(None)) == 1
    assert slurm.calls == []
    assert "is not a node_repair record" in caplog.text and "move it aside" in caplog.text


def test_the_alert_says_why_and_how_to_clear_it_and_clearing_resumes(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="node-repair")
    ids = [f"i-0123456789abcde{n:02x}" for n in range(3)]
    slurm = FakeSlurm(
        "\n".join(line(i, "IDLE+DRAIN", "healthcheck: EFA interface count 0, want 32") for i in ids)
    )
    aws = FakeAws()
    aws.instances(running=ids)
    for instance_id in ids[:2]:
        aws.terminate_ok(instance_id)
    state, events = tmp_path / "state.json", tmp_path / "events.log"
    with aws:
        node_repair.run_once(
            aws.clients, slurm, NOW, Policy(max_per_hour=2), state, node_repair.Events(events)
        )
    alert = next(r.message for r in caplog.records if r.message.startswith("ALERT"))
    assert "3 nodes failed and the bound allows 2 replacements per hour" in alert
    assert "--clear-alert" in alert and "sinfo -R" in alert
    assert "ALERT node replacement stopped" in events.read_text()
    assert node_repair.clear_alert(state, NOW + timedelta(minutes=5), node_repair.Events(events)) == 0
    assert repair_state.load(state).tripped is None
    aws.instances(running=[ids[2]])
    aws.terminate_ok(ids[2])
    with aws:
        node_repair.run_once(
            aws.clients,
            slurm,
            NOW + timedelta(minutes=6),
            Policy(max_per_hour=2),
            state,
            node_repair.Events(events),
        )
    aws.check()


def test_clearing_waits_for_a_run_that_holds_the_record(tmp_path):
    state = tmp_path / "state.json"
    repair_state.save(RepairState(tripped=Trip(NOW, "3 nodes failed")), state)
    argv = ["--clear-alert", "--state-file", str(state), "--events-file", str(tmp_path / "events.log")]
    with repair_state.locked(state):
        clearing = threading.Thread(target=node_repair.main, args=(argv,))
        clearing.start()
        clearing.join(timeout=1)
        assert clearing.is_alive()
        assert repair_state.load(state).tripped is not None
    clearing.join(timeout=10)
    assert repair_state.load(state).tripped is None


def test_the_report_is_one_json_document_of_nodes_and_record(tmp_path, capsys):
    state = tmp_path / "state.json"
    slurm = FakeSlurm(line(SICK, "IDLE+DRAIN", "healthcheck: GPU count 7, want 8"))
    assert node_repair.report(slurm, state) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["nodes"] == [
        {
            "name": f"gpu-{SICK}",
            "group": "gpu",
            "instance_id": SICK,
            "state": "DRAIN+IDLE",
            "reason": "healthcheck: GPU count 7, want 8",
        }
    ]
    assert doc["replacements"] == [] and doc["tripped"] is None


def test_the_report_stays_within_what_ssm_returns_however_long_the_record(tmp_path, capsys):
    state = tmp_path / "state.json"
    history = RepairState()
    for n in range(repair_decision.HISTORY):
        gone = f"i-{n:017x}"
        reason = f"healthcheck: GPU count 7, want 8;fi_info hung (no answer in 8 s) {'x' * 80}"
        history = history.record(Replacement(f"gpu-{gone}", "gpu", gone, NOW + timedelta(minutes=n), reason))
    repair_state.save(history, state)
    slurm = FakeSlurm(line(SICK, "IDLE"))
    assert node_repair.report(slurm, state) == 0
    out = capsys.readouterr().out
    assert len(out) < OUTPUT_LIMIT
    [last] = json.loads(out)["replacements"]
    assert last["instance_id"] == f"i-{repair_decision.HISTORY - 1:017x}"


def test_the_agent_runs_from_the_bundle_tree_and_clears_from_it(tmp_path):
    unset = run_from_bundle_copy(
        tmp_path, "gpucluster.agents.node_repair", "--state-file", str(tmp_path / "s.json")
    )
    assert unset.returncode == 2 and "GPUCLUSTER_REGION is not set" in unset.stdout
    cleared = run_from_bundle_copy(
        tmp_path,
        "gpucluster.agents.node_repair",
        "--clear-alert",
        "--state-file",
        str(tmp_path / "s.json"),
        "--events-file",
        str(tmp_path / "e.log"),
    )
    assert cleared.returncode == 0 and "no alert to clear" in cleared.stdout


def test_the_units_run_every_minute_and_write_only_their_own_directories():
    service = systemd_unit("gpucluster-node-repair.service")["Service"]
    assert service["WorkingDirectory"] == NODE_LAYOUT.agents_dir
    assert service["ExecStart"] == "/usr/bin/python3 -m gpucluster.agents.node_repair"
    assert service["ProtectSystem"] == "strict"
    assert f"/var/lib/{service['StateDirectory']}" == str(repair_state.STATE_FILE.parent)
    assert f"/var/log/{service['LogsDirectory']}" == str(repair_settings.EVENTS_FILE.parent)
    assert int(service["TimeoutStartSec"]) < 60
    assert systemd_unit("gpucluster-node-repair.timer")["Timer"]["OnCalendar"] == "*-*-* *:*:15"
    assert shipped_files(SlurmSite())[str(repair_settings.EVENTS_FILE)] == "node-repair"


@pytest.mark.parametrize("reason", ["", "Not responding"])
def test_nodes_without_a_check_reason_are_not_replaced_before_the_grace(tmp_path, reason):
    slurm = FakeSlurm(line(SICK, "DOWN+NOT_RESPONDING" if reason else "IDLE+NOT_RESPONDING", reason))
    aws = FakeAws()
    if reason:
        aws.instances(running=[SICK])
    with aws:
        assert (
            node_repair.run_once(
                aws.clients,
                slurm,
                NOW + timedelta(minutes=9),
                Policy(),
                tmp_path / "s.json",
                node_repair.Events(None),
            )
            == 0
        )


def test_nodes_whose_instances_are_gone_are_neither_replaced_nor_counted(tmp_path, caplog):
    """A Capacity Block's end: Auto Scaling already terminated every instance, and every node
    stops answering at once. They are node_cleanup's, and the bound must not trip."""
    caplog.set_level(logging.INFO, logger="node-repair")
    ids = [f"i-0123456789abcde{n:02x}" for n in range(4)]
    slurm = FakeSlurm("\n".join(line(i, "DOWN+NOT_RESPONDING", "Not responding") for i in ids))
    aws = FakeAws()
    aws.instances(terminated=ids[:3])  # the fourth is unknown to EC2: gone too
    state = tmp_path / "state.json"
    with aws:
        later = NOW + timedelta(hours=1)
        assert node_repair.run_once(aws.clients, slurm, later, Policy(), state, node_repair.Events(None)) == 0
    aws.check()
    assert "ALERT" not in caplog.text
    record = repair_state.load(state)
    assert record.tripped is None and record.replacements == ()


def test_ec2_unreachable_replaces_nothing(tmp_path, caplog):
    slurm = FakeSlurm(line(SICK, "IDLE+DRAIN", "healthcheck: GPU count 7, want 8"))
    aws = FakeAws()
    aws.ec2.add_client_error("describe_instances", "RequestLimitExceeded", "slow down")
    with aws:
        assert (
            node_repair.run_once(
                aws.clients, slurm, NOW, Policy(), tmp_path / "s.json", node_repair.Events(None)
            )
            == 1
        )
    assert "cannot ask EC2 about the failed nodes' instances, nothing replaced" in caplog.text

"""Failed node replacement: run every minute on the head node by a systemd timer.

A compute node that one of gpucluster's checks drained (health_reasons), or that Slurm
set DOWN as "Not responding", is replaced inside its group: jobs still on it are
requeued (`scontrol requeue`), then its instance is terminated through Auto Scaling
(TerminateInstanceInAutoScalingGroup, ShouldDecrementDesiredCapacity=false), which
launches a new instance from the group's launch template, so into the same Capacity
Block or ODCR. The new node joins through the same pre-join checks under its own name;
node_cleanup removes the old record once EC2 reports the instance gone. What is
replaced when, and the bound on how many, is repair_decision's.

Every replacement is logged here, appended to EVENTS_FILE (which the CloudWatch agent
ships to the cluster's log group) and noted in the node's Slurm reason. When the bound
trips, an ALERT line says why and what to do; replacement stays off until a person runs
this agent with --clear-alert on the head node (CLEAR_COMMAND).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from gpucluster.agents import repair_state, runtime
from gpucluster.agents.health_reasons import replaced_reason
from gpucluster.agents.node_cleanup import GONE_INSTANCE_STATES, instance_states
from gpucluster.agents.repair_decision import (
    NodeView,
    Plan,
    Policy,
    RepairState,
    Replacement,
    decide,
    suspects,
)
from gpucluster.agents.repair_settings import BOUND_SETTING, ENABLED_SETTING, EVENTS_FILE, GRACE_SETTING
from gpucluster.agents.repair_slurm import list_nodes, requeue_jobs
from gpucluster.agents.scontrol import Runner, ScontrolError, run_command

LOG = logging.getLogger("node-repair")

# The agents' package tree, which this file lies in as gpucluster/agents/node_repair.py.
TREE = Path(__file__).resolve().parents[2]
CLEAR_COMMAND = f"cd {TREE} && sudo python3 -m gpucluster.agents.node_repair --clear-alert"


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Events:
    """The agent's record lines: the journal (stdout) and EVENTS_FILE for CloudWatch."""

    def __init__(self, path: Path | None) -> None:
        self.path = path

    def __call__(self, now: datetime, level: int, line: str) -> None:
        LOG.log(level, "%s", line)
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as out:
                out.write(f"{stamp(now)} {logging.getLevelName(level)} {line}\n")
        except OSError as err:
            LOG.error("cannot append to %s: %s", self.path, err.strerror)


def terminate(autoscaling: Any, instance_id: str) -> None:
    """Terminate and let the group replace: keeping the desired capacity makes Auto Scaling
    launch a new instance from the same launch template, so into the same reservation."""
    autoscaling.terminate_instance_in_auto_scaling_group(
        InstanceId=instance_id, ShouldDecrementDesiredCapacity=False
    )


def act(
    plan: Plan, autoscaling: Any, run: Runner, now: datetime, events: Events, state_file: Path
) -> tuple[RepairState, bool]:
    """Carry out the plan; the state with every replacement Auto Scaling accepted, and ok.
    Each is saved as soon as it is accepted: systemd kills a run at TimeoutStartSec, and a
    replacement it forgot would not count against the bound."""
    state, ok = plan.state, True
    repair_state.save(state, state_file)
    for verdict in plan.to_replace:
        node = verdict.node
        try:
            jobs = requeue_jobs(run, node.name) if verdict.requeue else []
        except ScontrolError as err:
            LOG.error("node %s: cannot list its jobs, not replaced this run: %s", node.name, err)
            ok = False
            continue
        try:
            terminate(autoscaling, node.instance_id)
        except (BotoCoreError, ClientError) as err:
            LOG.error(
                "node %s: Auto Scaling did not terminate %s, retrying next run: %s",
                node.name,
                node.instance_id,
                err,
            )
            ok = False
            continue
        state = state.record(Replacement(node.name, node.group, node.instance_id, now, node.reason))
        repair_state.save(state, state_file)
        note = replaced_reason(node.reason, node.instance_id, stamp(now))
        kept = run(["scontrol", "update", f"NodeName={node.name}", f"Reason={note}"])
        if kept.returncode != 0:
            LOG.warning("node %s: reason not updated: %s", node.name, kept.output)
        requeued = f" requeued jobs {','.join(jobs)};" if jobs else ""
        events(
            now,
            logging.WARNING,
            f"REPLACED node={node.name} group={node.group} instance={node.instance_id}:{requeued} "
            f"terminated through Auto Scaling, which launches a replacement; reason: {node.reason}",
        )
    return state, ok


def alert_line(why: str) -> str:
    return (
        f"ALERT node replacement stopped: {why}. A bad AMI, driver, security group or mount fails "
        "every node alike; find the cause in the nodes' reasons (`sinfo -R`) and bootstrap logs, "
        f"fix it, then run `{CLEAR_COMMAND}` on the head node to resume"
    )


@dataclass(frozen=True)
class Clients:
    ec2: Any
    autoscaling: Any


def gone_instances(ec2: Any, nodes: list[NodeView]) -> frozenset[str]:
    """Which of these nodes' instances EC2 reports shutting down or terminated, or not at all."""
    if not nodes:
        return frozenset()
    states = instance_states(ec2, [node.instance_id for node in nodes])
    return frozenset(
        node.instance_id
        for node in nodes
        if states.get(node.instance_id) is None or states[node.instance_id] in GONE_INSTANCE_STATES
    )


def run_once(
    clients: Clients, run: Runner, now: datetime, policy: Policy, state_file: Path, events: Events
) -> int:
    try:
        state = repair_state.load(state_file)
    except repair_state.StateError as err:
        LOG.error("nothing replaced: %s", err)
        return 1
    try:
        nodes = list_nodes(run)
    except ScontrolError as err:
        LOG.error("cannot list Slurm nodes, nothing replaced: %s", err)
        return 1
    try:
        gone = gone_instances(clients.ec2, suspects(nodes, state))
    except (BotoCoreError, ClientError) as err:
        LOG.error("cannot ask EC2 about the failed nodes' instances, nothing replaced: %s", err)
        return 1
    plan = decide(nodes, state, policy, now, gone)
    for verdict in plan.verdicts:
        if verdict.action != "replace":
            (LOG.info if verdict.action == "wait" else LOG.debug)(
                "node %s: %s", verdict.node.name, verdict.why
            )
    if plan.alert is not None:
        events(now, logging.ERROR, alert_line(plan.alert))
    elif plan.state.tripped is not None:
        LOG.error("%s", alert_line(plan.state.tripped.why))
    state, ok = act(plan, clients.autoscaling, run, now, events, state_file)
    LOG.info(
        "nodes=%d replaced=%d waiting=%d replaced-in-last-hour=%d%s",
        len(nodes),
        len(plan.to_replace),
        sum(1 for v in plan.verdicts if v.action == "wait"),
        len(state.counted(now)),
        " TRIPPED" if state.tripped else "",
    )
    return 0 if ok else 1


def clear_alert(state_file: Path, now: datetime, events: Events) -> int:
    try:
        state = repair_state.load(state_file)
    except repair_state.StateError as err:
        LOG.error("%s", err)
        return 1
    if state.tripped is None:
        LOG.info(
            "no alert to clear; the bound counts from %s", stamp(state.cleared_at or now - timedelta(hours=1))
        )
        return 0
    repair_state.save(state.clear(now), state_file)
    events(
        now, logging.WARNING, f"CLEARED the replacement alert of {stamp(state.tripped.at)}; replacing again"
    )
    return 0


def report(run: Runner, state_file: Path) -> int:
    """What `gpucluster nodes` reads through SSM Run Command: one JSON document on stdout.
    Of the record's replacements, only what it shows (each listed node's, each group's last):
    the whole history outgrows the 24,000 characters SSM returns."""
    try:
        state = repair_state.load(state_file)
        nodes = list_nodes(run)
    except (repair_state.StateError, ScontrolError) as err:
        print(json.dumps({"error": str(err)}))
        return 1
    listed = {node.instance_id for node in nodes}
    last = {r.group: r for r in state.replacements}
    shown = tuple(r for r in state.replacements if r.instance_id in listed or last[r.group] is r)
    state = replace(state, replacements=shown)
    doc = {
        "nodes": [
            {
                "name": n.name,
                "group": n.group,
                "instance_id": n.instance_id,
                "state": "+".join(sorted(n.states)),
                "reason": n.reason,
            }
            for n in nodes
        ],
        **{key: value for key, value in repair_state.to_json(state).items() if key != "first_seen"},
    }
    print(json.dumps(doc, separators=(",", ":")))
    return 0


def policy_from(settings: runtime.Settings) -> Policy:
    enabled = (settings.get(ENABLED_SETTING) or "true").lower()
    if enabled not in ("true", "false"):
        raise runtime.SettingError(f"{ENABLED_SETTING} '{enabled}' must be true or false")
    numbers = {}
    for key, default in ((BOUND_SETTING, 2), (GRACE_SETTING, 10)):
        raw = settings.get(key)
        try:
            numbers[key] = default if raw is None else int(raw)
        except ValueError as err:
            raise runtime.SettingError(f"{key} '{raw}' is not a whole number") from err
    try:
        return Policy(enabled == "true", numbers[BOUND_SETTING], timedelta(minutes=numbers[GRACE_SETTING]))
    except ValueError as err:
        raise runtime.SettingError(f"{BOUND_SETTING}/{GRACE_SETTING}: {err}") from err


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    runtime.add_common_arguments(parser, cluster=False)
    parser.add_argument("--state-file", type=Path, default=repair_state.STATE_FILE, help="the agent's record")
    parser.add_argument(
        "--events-file", type=Path, default=EVENTS_FILE, help="where replacements are recorded"
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--clear-alert", action="store_true", help="resume replacement after the bound tripped"
    )
    action.add_argument("--report", action="store_true", help="print the nodes and the record as JSON")
    args = parser.parse_args(argv)
    runtime.configure_logging(args.verbose)
    events = Events(args.events_file)
    if args.report:
        return report(run_command, args.state_file)
    # A person's --clear-alert and the timer's run each read, then rewrite the record.
    with repair_state.locked(args.state_file):
        if args.clear_alert:
            return clear_alert(args.state_file, datetime.now(UTC), events)
        try:
            settings = runtime.Settings(args, os.environ)
            region, policy = settings.region(), policy_from(settings)
        except runtime.SettingError as err:
            LOG.error("%s", err)
            return 2
        clients = Clients(runtime.client("ec2", region), runtime.client("autoscaling", region))
        return run_once(clients, run_command, datetime.now(UTC), policy, args.state_file, events)


if __name__ == "__main__":
    sys.exit(main())

"""The head node's report of its compute nodes, fetched from the workstation.

The workstation cannot reach slurmctld, so it asks the head node to run node_repair's
`--report` through SSM Run Command (AWS-RunShellScript) and reads the JSON it prints.
Why this way: it shows what slurmctld says now, not a copy that may be stale; it uses
Session Manager's agent and permissions, the cluster's access path to every node already;
and the head needs no new permission or storage. (A state document the agent publishes
would need a writable S3 object or Parameter Store entry, whose 4-8 KB limit a large
cluster's reasons outgrow.) GetCommandInvocation returns the first 24,000 characters of
the output, a few hundred nodes' rows; a longer report is refused with a clear line.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpucluster import names
from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import aws_call, explain
from gpucluster.aws.instances import running_instances
from gpucluster.command_lines import command_line
from gpucluster.config import ClusterConfig
from gpucluster.env_problem import EnvironmentProblem
from gpucluster.json_input import JsonProblem, parse_json
from gpucluster.nodes.report_shape import HeadReport, read_report
from gpucluster.resolved.node_layout import NODE_LAYOUT

DOCUMENT = "AWS-RunShellScript"
REPAIR_AGENT = "gpucluster.agents.node_repair"


def agent_line(*command: str) -> str:
    """`command` (`python3 -m gpucluster.agents...`) run as the agents' units run them: in
    their package tree, from which `python3 -m` imports them."""
    return f"{command_line('cd', NODE_LAYOUT.agents_dir)} && {command_line(*command)}"


REPORT_COMMAND = agent_line("python3", "-m", REPAIR_AGENT, "--report")
# How long the head may take to answer: SSM delivers within seconds to a running agent.
WAIT_SECONDS = 90
POLL_SECONDS = 2
ATTEMPTS = WAIT_SECONDS // POLL_SECONDS
RUNNING = frozenset({"Pending", "InProgress", "Delayed"})
# GetCommandInvocation's StandardOutputContent limit (SSM API reference).
OUTPUT_LIMIT = 24_000


@dataclass(frozen=True)
class HeadAnswer:
    head_instance_id: str
    report: HeadReport


def find_head(clients: Clients, cfg: ClusterConfig) -> str:
    ids = running_instances(clients, cfg, "head")
    if len(ids) != 1:
        raise EnvironmentProblem(
            f"cluster {cfg.name} ({cfg.region})",
            f"found {len(ids)} running head nodes tagged {names.CLUSTER_TAG}={cfg.name} "
            f"({', '.join(ids) or 'none'})",
            "deploy the cluster (`cdk deploy`), or start its head node, and re-run",
        )
    return ids[0]


def _invocation(ssm: Any, command_id: str, head: str, region: str) -> dict[str, Any] | None:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer: dict[str, Any] = ssm.get_command_invocation(CommandId=command_id, InstanceId=head)
    except ClientError as exc:
        # Asked a moment after SendCommand, before SSM registered the invocation.
        if exc.response.get("Error", {}).get("Code") == "InvocationDoesNotExist":
            return None
        raise explain("ssm:GetCommandInvocation", region, exc) from None
    except BotoCoreError as exc:
        raise explain("ssm:GetCommandInvocation", region, exc) from None
    return answer


def run_report(
    clients: Clients, cfg: ClusterConfig, sleep: Callable[[float], None] | None = None
) -> HeadAnswer:
    head = find_head(clients, cfg)
    ssm = clients.get("ssm", cfg.region)
    with aws_call("ssm:SendCommand", cfg.region):
        sent = ssm.send_command(
            InstanceIds=[head],
            DocumentName=DOCUMENT,
            Parameters={"commands": [REPORT_COMMAND]},
            TimeoutSeconds=60,
            Comment=f"gpucluster nodes {cfg.name}",
        )
    command_id = sent["Command"]["CommandId"]
    subject = f"head node {head} ({cfg.region})"
    # The id is SSM's answer, pasted by the user: quoted. The region is the cluster's, which
    # the profile's default need not be.
    lookup = command_line(
        "aws",
        "ssm",
        "get-command-invocation",
        "--command-id",
        command_id,
        "--instance-id",
        head,
        "--region",
        cfg.region,
    )
    for _ in range(ATTEMPTS):
        answer = _invocation(ssm, command_id, head, cfg.region)
        if answer is not None and answer["Status"] not in RUNNING:
            return HeadAnswer(head, _parse(answer, subject, lookup))
        (sleep or time.sleep)(POLL_SECONDS)
    raise EnvironmentProblem(
        subject,
        f"did not answer SSM command {command_id} within {WAIT_SECONDS} s",
        "check that its SSM agent is online (`aws ssm describe-instance-information`) and re-run",
    )


def _parse(answer: dict[str, Any], subject: str, lookup: str) -> HeadReport:
    """`lookup`: the command that shows the invocation, for a failure's fix."""
    output = str(answer.get("StandardOutputContent", ""))
    try:
        report = parse_json(output)
    except JsonProblem:
        report = None
    if isinstance(report, dict) and "error" in report:
        raise EnvironmentProblem(
            subject,
            f"the node report failed: {report['error']}",
            "fix what it names on the head node and re-run",
        )
    if answer["Status"] != "Success" or not isinstance(report, dict):
        said = " ".join((output + " " + str(answer.get("StandardErrorContent", ""))).split())[:300]
        fix = (
            "the report is longer than SSM returns; run `"
            + REPORT_COMMAND
            + "` on the head node (Session Manager)"
            if len(output) >= OUTPUT_LIMIT
            else f"see `{lookup}`; is the cluster's bundle current?"
        )
        raise EnvironmentProblem(
            subject, f"the node report ended {answer['Status']}: {said or 'no output'}", fix
        )
    return read_report(report, subject)

"""What node_repair reads from slurmctld and asks of it: the instance-named compute nodes
with their reasons and the time each reason was set, and the requeue of a failed node's jobs."""

from __future__ import annotations

import logging
import re

from gpucluster.agents.cluster_names import COMPUTE_NODE_NAME
from gpucluster.agents.repair_decision import NodeView
from gpucluster.agents.scontrol import Runner, checked, parse_records, parse_slurm_time

LOG = logging.getLogger("node-repair")

# `Reason=<text> [<user>@<time>]`: the reason runs to the user and time Slurm appends.
_REASON = re.compile(r"(?:^|\s)Reason=(?P<text>.*?)(?: \[(?P<user>[^@\]\s]+)@(?P<time>[^\]]+)\])?(?= \w+=|$)")


def parse_nodes(text: str) -> list[NodeView]:
    """Instance-named nodes from `scontrol --future -o show nodes`, with reason and its time."""
    nodes = []
    for line in text.splitlines():
        records = parse_records(line)
        if not records:
            continue
        record = records[0]
        match = COMPUTE_NODE_NAME.match(record.get("NodeName", ""))
        if not match:
            continue
        reason, when = "", None
        found = _REASON.search(line)
        if found:
            reason = found.group("text").strip()
            if found.group("time"):
                when = parse_slurm_time(found.group("time"))
        nodes.append(
            NodeView(
                name=record["NodeName"],
                group=match.group("group"),
                instance_id=match.group("instance_id"),
                states=frozenset(record.get("State", "").split("+")),
                reason=reason,
                reason_time=when,
            )
        )
    return nodes


def list_nodes(run: Runner) -> list[NodeView]:
    return parse_nodes(checked(run(["scontrol", "--future", "-o", "show", "nodes"])).stdout)


def requeue_jobs(run: Runner, node: str) -> list[str]:
    """Requeue every job on `node`; the job ids asked for. A job that refuses (submitted with
    --no-requeue) is logged; it ends when the instance goes."""
    listed = checked(run(["squeue", "--noheader", f"--nodelist={node}", "--format=%A"]))
    jobs = sorted(set(listed.stdout.split()))
    for job in jobs:
        result = run(["scontrol", "requeue", job])
        if result.returncode != 0:
            LOG.warning("job %s on %s not requeued (%s); it ends with the instance", job, node, result.output)
    return jobs

"""What the head's metrics collector reads from Slurm: node states, GPU counts, and which
GPUs of which nodes each running job holds.

`scontrol -o show nodes` gives each node's State and its configured and allocated TRES
(`CfgTRES=...,gres/gpu=8`, `AllocTRES=...,gres/gpu=4`). `scontrol -d -o show jobs`
(details) gives, per running job, one `Nodes=<hostlist> CPU_IDs=... Mem=... GRES=...`
group per set of nodes with the same allocation, GRES naming the GPU indices
(`gpu:4(IDX:0-3)`, `gpu:h100:2(IDX:0,5)`): the job's GPUs come from Slurm itself, never
from guessing. Hostlists (`gpu-i-0a1b2c3d4e5f6000[1-2]`) are expanded by
`scontrol show hostnames`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpucluster.agents.cluster_names import COMPUTE_NODE_NAME
from gpucluster.agents.scontrol import Runner, checked, parse_records

_GPU_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")
_NODE_GROUP = re.compile(r"(?:^|\s)Nodes=(?P<nodes>\S+) CPU_IDs=\S* Mem=\S* GRES=(?P<gres>\S*)")
_GPU_IDX = re.compile(r"(?:^|,)gpu(?::[^:(,]+)?:\d+\(IDX:(?P<idx>[0-9,-]+)\)")


@dataclass(frozen=True)
class NodeState:
    name: str
    # One of metric_names.NODE_STATES, or None for states it does not count (FUTURE, ...).
    bucket: str | None
    gpus: int
    gpus_allocated: int


def bucket(state: str) -> str | None:
    """A Slurm node state (`IDLE+DRAIN`, `DOWN+NOT_RESPONDING`, `MIXED`) as the one bucket
    the dashboard counts it in: down and drained win over what the node is doing."""
    flags = set(state.upper().split("+"))
    if "DOWN" in flags:
        return "down"
    if flags & {"DRAIN", "DRAINED", "DRAINING"}:
        return "drained"
    for name in ("mixed", "allocated", "idle"):
        if name.upper() in flags:
            return name
    return None


def _gpu_tres(tres: str) -> int:
    match = _GPU_TRES.search(tres)
    return int(match.group(1)) if match else 0


def parse_nodes(text: str) -> list[NodeState]:
    """Compute nodes (named after their group and instance) from `scontrol -o show nodes`."""
    nodes = []
    for record in parse_records(text):
        name = record.get("NodeName", "")
        if not COMPUTE_NODE_NAME.match(name):
            continue
        nodes.append(
            NodeState(
                name,
                bucket(record.get("State", "")),
                _gpu_tres(record.get("CfgTRES", "")),
                _gpu_tres(record.get("AllocTRES", "")),
            )
        )
    return nodes


def indices(text: str) -> list[int]:
    """`0-3,6` -> [0, 1, 2, 3, 6]."""
    found: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        found.extend(range(int(first), int(last or first) + 1))
    return found


@dataclass(frozen=True)
class Job:
    job_id: str
    state: str
    # (node name, GPU index) of every GPU the job holds; empty unless it runs.
    gpus: tuple[tuple[str, int], ...]


def parse_jobs(text: str, expand: dict[str, list[str]]) -> list[Job]:
    """Jobs from `scontrol -d -o show jobs`; `expand` maps each hostlist to its names
    (job_hostlists says which to ask for)."""
    jobs = []
    for line in text.splitlines():
        records = parse_records(line)
        if not records or "JobId" not in records[0]:
            continue
        record = records[0]
        gpus: list[tuple[str, int]] = []
        for group in _NODE_GROUP.finditer(line):
            held = [index for match in _GPU_IDX.finditer(group["gres"]) for index in indices(match["idx"])]
            for node in expand.get(group["nodes"], [group["nodes"]]):
                gpus.extend((node, index) for index in held)
        jobs.append(Job(record["JobId"], record.get("JobState", ""), tuple(gpus)))
    return jobs


def job_hostlists(text: str) -> set[str]:
    """The compressed hostlists (`name[1-2]`) in the jobs' node groups."""
    return {group["nodes"] for group in _NODE_GROUP.finditer(text) if "[" in group["nodes"]}


def read_jobs(run: Runner) -> list[Job]:
    text = checked(run(["scontrol", "-d", "-o", "show", "jobs"])).stdout
    expand = {
        hostlist: checked(run(["scontrol", "show", "hostnames", hostlist])).stdout.split()
        for hostlist in sorted(job_hostlists(text))
    }
    return parse_jobs(text, expand)


def read_nodes(run: Runner) -> list[NodeState]:
    return parse_nodes(checked(run(["scontrol", "-o", "show", "nodes"])).stdout)


def count(values: Iterable[str | None], names: Iterable[str]) -> dict[str, int]:
    seen = list(values)
    return {name: seen.count(name) for name in names}

"""The network each host's NCCL used, against the EFA its group should use.

README promises EFA on every host: a host whose NCCL never named its network proves
nothing and makes the run NO-GO, as one that fell back to sockets does. Only the latter
is the node's fault (gpucluster.gate.decide's Reason.node_fault): missing lines are the
way the test was run.
"""

from __future__ import annotations

from typing import Protocol

from gpucluster.catalog import InstanceType
from gpucluster.gate.model import NcclRun

_SHOW_EVERY_HOST = (
    "run with NCCL_DEBUG=INFO on every node (mpirun passes it on only with -x NCCL_DEBUG=INFO) "
    "and keep every rank's output"
)


class AddReason(Protocol):
    def __call__(self, code: str, text: str, *, node_fault: bool, nodes: tuple[str, ...] = ()) -> None: ...


def judge_transport(
    run: NcclRun, instance: InstanceType | None, efa_expected: bool, add: AddReason, notes: list[str]
) -> None:
    if not run.networks:
        how = (
            "the -J JSON holds no NCCL INFO lines; judge the text log of the same run"
            if run.kind == "json"
            else "no NCCL INFO line names the network; run with NCCL_DEBUG=INFO"
        )
        add("transport-unknown", f"transport unknown: {how}", node_fault=False)
        return
    other = [seen for seen in run.networks if seen.kind != "efa"]
    if other and not efa_expected:
        shown = ", ".join(f"{seen.host}: {seen.detail}" for seen in other)
        notes.append(f"the group runs without EFA (efa: false); NCCL uses {shown}")
        return
    if other:
        shown = ", ".join(f"{seen.host}: {seen.detail} (line {seen.line})" for seen in other)
        add(
            "transport-not-efa",
            f"NCCL does not use EFA on {shown}; check the aws-ofi-nccl plugin is on "
            "LD_LIBRARY_PATH and the EFA security group",
            node_fault=True,
            nodes=tuple(seen.host for seen in other),
        )
    _unseen(run, add)
    _nics(run, instance, add, notes)


def _unseen(run: NcclRun, add: AddReason) -> None:
    """Hosts in the run whose NCCL never named its network: EFA on them is not shown."""
    shown = {seen.host for seen in run.networks}
    missing = [host for host in run.hosts if host not in shown]
    if missing:
        add(
            "transport-unknown",
            f"transport unknown on {', '.join(missing)}: no NCCL INFO line from "
            f"{'it' if len(missing) == 1 else 'them'} names the network "
            f"({len(run.hosts) - len(missing)} of {len(run.hosts)} hosts did); {_SHOW_EVERY_HOST}",
            node_fault=False,
        )
        return
    # No device lines name the hosts: NCCL's own node count says how many showed nothing.
    nodes = run.nodes.value if run.nodes is not None and run.nodes.origin == "log" else 0
    if not run.hosts and nodes > len(shown):
        add(
            "transport-unknown",
            f"transport unknown on {nodes - len(shown)} of {nodes} nodes: NCCL INFO lines name "
            f"the network of {len(shown)} ({', '.join(sorted(shown))}); {_SHOW_EVERY_HOST}",
            node_fault=False,
        )


def _nics(run: NcclRun, instance: InstanceType | None, add: AddReason, notes: list[str]) -> None:
    efa = [seen for seen in run.networks if seen.kind == "efa"]
    counted = [seen for seen in efa if seen.efa_nics is not None]
    if efa and not counted:
        notes.append("aws-ofi-nccl did not print its EFA NIC count ('found N nics'): not checked")
    if instance is None or not instance.efa_supported:
        return
    short = [seen for seen in counted if (seen.efa_nics or 0) < instance.max_efa_interfaces]
    if short:
        shown = ", ".join(f"{seen.host}: {seen.efa_nics} (line {seen.line})" for seen in short)
        add(
            "efa-nics",
            f"fewer EFA NICs than the {instance.max_efa_interfaces} a {instance.name} has: {shown}",
            node_fault=True,
            nodes=tuple(seen.host for seen in short),
        )

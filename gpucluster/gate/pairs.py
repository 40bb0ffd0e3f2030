"""Which nodes to take out: pairwise runs and efa-check lines name them.

The pairwise job runs 2-node tests over disjoint pairs, then a second round with other
partners. A node whose pairs fail for a node reason (gpucluster.gate.decide.Reason.
node_fault) and that passes with no partner at all is a suspect; its partners passed
elsewhere, so they are not. A pair that fails while both nodes have no passing pair
cannot be split: the report says to run another round.

With each node's leaf switch (the pairwise job's pair lines name it; `--topology` gives the
cluster's topology.conf, which wins), each suspect names
its switch, and a bandwidth drop that follows a switch boundary is not blamed on a node:
when every pair across two leaf switches fell below the floor for bandwidth alone, none
across them passed, and no pair inside either switch failed, those pairs name the
boundary (a note), not their nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

from gpucluster.command_lines import command_line
from gpucluster.gate.decide import Verdict
from gpucluster.gate.efa_checks import failed_pingpongs
from gpucluster.gate.model import Frozen
from gpucluster.job_output import NO_SWITCH

_REASON_LIMIT = 120


class Suspect(Frozen):
    node: str
    evidence: tuple[str, ...]
    drain: str
    # Its leaf switch, when the topology was given and names the node.
    switch: str | None = None


class Attribution(Frozen):
    pairs: int
    suspects: tuple[Suspect, ...] = ()
    notes: tuple[str, ...] = ()


def drain_command(node: str, reason: str) -> str:
    """The node's name and its partners' in the reason are the logs': quoted (command_lines)."""
    text = " ".join(f"gpucluster gate: {reason}".split())[:_REASON_LIMIT].strip()
    return command_line("scontrol", "update", f"nodename={node}", "state=drain", f"reason={text}")


# A failed pair: its nodes, its round and the node-fault reason codes.
_Failure = tuple[str, str, int, str]
BANDWIDTH = "busbw-below-threshold"


def _boundaries(
    verdicts: list[Verdict], leaves: Mapping[str, str]
) -> tuple[set[frozenset[str]], list[_Failure]]:
    """The leaf-switch pairs every pair across which fell below the floor (and nothing else)
    while no pair inside either switch failed, and the failures across them."""
    across_failed: dict[frozenset[str], list[_Failure]] = defaultdict(list)
    across_passed: set[frozenset[str]] = set()
    inside_failed: set[str] = set()
    for verdict in verdicts:
        run = verdict.run
        if run is None or run.pair is None:
            continue
        first, second = run.pair.nodes
        if first not in leaves or second not in leaves:
            continue
        key = frozenset({leaves[first], leaves[second]})
        codes = {reason.code for reason in verdict.reasons if reason.node_fault}
        if verdict.go and len(key) == 2:
            across_passed.add(key)
        elif codes and len(key) == 1:
            inside_failed.add(leaves[first])
        elif codes and len(key) == 2:
            failure = (first, second, run.pair.round, ", ".join(sorted(codes)))
            # Any other reason (wrong results, a dead rank) is a node's, wherever it is.
            across_failed[key if codes == {BANDWIDTH} else frozenset()].append(failure)
    found = {key for key in across_failed if key and key not in across_passed and not key & inside_failed}
    return found, [failure for key in found for failure in across_failed[key]]


def _pair_switches(verdicts: list[Verdict]) -> dict[str, str]:
    """Each node's leaf switch as the pairwise job's pair lines name it."""
    found: dict[str, str] = {}
    for verdict in verdicts:
        run = verdict.run
        if run is None or run.pair is None or run.pair.switches is None:
            continue
        for node, switch in zip(run.pair.nodes, run.pair.switches, strict=True):
            if switch != NO_SWITCH:
                found[node] = switch
    return found


def attribute(verdicts: list[Verdict], leaves: Mapping[str, str] | None = None) -> Attribution:
    """`leaves`: each node's leaf switch from the cluster's topology.conf, over what the
    pair lines say."""
    leaves = {**_pair_switches(verdicts), **(leaves or {})}
    boundaries, at_boundaries = _boundaries(verdicts, leaves)
    passed: set[str] = set()
    failed: dict[str, list[str]] = defaultdict(list)
    failed_pairs: list[tuple[str, str]] = []
    undecided = 0
    pairs = 0
    for verdict in verdicts:
        run = verdict.run
        if run is None or run.pair is None:
            continue
        pairs += 1
        first, second = run.pair.nodes
        codes = ", ".join(sorted({reason.code for reason in verdict.reasons if reason.node_fault}))
        if verdict.go:
            passed.update(run.pair.nodes)
        elif (first, second, run.pair.round, codes) in at_boundaries:
            continue
        elif codes:
            failed[first].append(f"pair with {second} (round {run.pair.round}): {codes}")
            failed[second].append(f"pair with {first} (round {run.pair.round}): {codes}")
            failed_pairs.append((first, second))
        else:
            undecided += 1
    checks = [check for verdict in verdicts for check in verdict.efa_checks]
    for check in checks:
        result = check.result
        if check.own_failed:
            failed[result.node].append(
                f"efa-check: {result.efa_devices}/{result.expected_efa_devices} EFA, {result.reason}"
            )
        partners = sorted(set(result.pingpong_failed_with))
        if len(partners) >= 2:
            # Failed with two partners: the end they share is the bad one.
            failed[result.node].append(f"efa-check: fi_pingpong failed with {', '.join(partners)}")
    suspects = sorted(node for node in failed if node not in passed or _efa_failed(failed[node]))
    notes = [
        f"pair {first},{second} failed and neither node passed with another partner: "
        "run another pairwise round to tell which"
        for first, second in failed_pairs
        if first in suspects and second in suspects and not _efa_failed(failed[first] + failed[second])
    ]
    notes += [
        f"fi_pingpong between {first} and {second} failed and neither node failed its own checks "
        "or with a second partner: submit efa-check again with other partners (more nodes, or "
        "--nodelist) to tell which"
        for first, second in failed_pingpongs(checks)
        if not _efa_failed(failed.get(first, []) + failed.get(second, []))
    ]
    for key in sorted(boundaries, key=sorted):
        across = [f"{a},{b} (round {r})" for a, b, r, _ in at_boundaries if {leaves[a], leaves[b]} == key]
        notes.append(
            f"switch boundary {' | '.join(sorted(key))}: every pair across it fell below the floor "
            f"({'; '.join(across)}) and no pair inside either switch failed: the drop follows the "
            "switch boundary, not a node, so no node is drained; keep large jobs under one switch "
            "(--switches=1) and report the link between these switches to AWS"
        )
    if undecided:
        notes.append(f"{undecided} pair run(s) could not be judged (see their reasons): they name no node")
    return Attribution(
        pairs=pairs,
        suspects=tuple(
            Suspect(
                node=node,
                evidence=tuple(failed[node]),
                drain=drain_command(node, failed[node][0]),
                switch=leaves.get(node),
            )
            for node in suspects
        ),
        notes=tuple(notes),
    )


def _efa_failed(evidence: list[str]) -> bool:
    # A node's own efa-check failure names it whatever its pairs did.
    return any(item.startswith("efa-check:") for item in evidence)

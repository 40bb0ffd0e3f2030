"""`gpucluster topology render`: the topology.conf the head would write, offline; `gpucluster
topology annotations`: the node annotations that place the same instances on EKS."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from gpucluster.agents.cluster_names import INSTANCE_ID
from gpucluster.bad_input import BadInput
from gpucluster.cli.root import out, verb_group, warn_each
from gpucluster.cli.runner import VerbCommand
from gpucluster.command_lines import print_commands
from gpucluster.json_input import JsonProblem, parse_json

topology_app = verb_group("topology", "Slurm's network topology from EC2 DescribeInstanceTopology.")

_INSTANCE_ID = re.compile(f"^{INSTANCE_ID}$")
_NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# A Kubernetes node's name is a DNS subdomain (RFC 1123), or the API refuses it: a list with
# another is not what kubectl printed. Refused, not only quoted: a name starting with "-" is
# an option to kubectl (--server=... would hand that server the user's token).
_DNS_LABEL = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?"
_KUBERNETES_NAME = re.compile(rf"(?=.{{1,253}}\Z){_DNS_LABEL}(?:\.{_DNS_LABEL})*")


def _read_json(path: Path, fix: str) -> Any:
    try:
        text = path.read_text()
    except OSError as err:
        raise BadInput(path, "(file)", f"cannot be read ({err.strerror})", fix) from err
    try:
        return parse_json(text)
    except JsonProblem as err:
        raise BadInput(path, "(file)" if err.line is None else f"line {err.line}", err.what, fix) from None


def _names(path: Path) -> dict[str, str]:
    fix = 'pass a JSON object of instance ids to Slurm node names, {"i-0123...": "gpu-i-0123..."}'
    doc = _read_json(path, fix)
    if not isinstance(doc, dict):
        raise BadInput(path, "(top level)", f"expected a JSON object, got {type(doc).__name__}", fix)
    for instance_id, name in doc.items():
        if not _INSTANCE_ID.fullmatch(instance_id):
            raise BadInput(path, instance_id, "is not an EC2 instance id (i- and 8 or 17 hex digits)", fix)
        # fullmatch: `$` alone admits a final newline, a line of its own in topology.conf.
        if not isinstance(name, str) or not _NODE_NAME.fullmatch(name):
            raise BadInput(path, instance_id, f"{name!r} is not a Slurm node name", fix)
    return doc


@topology_app.command("render", cls=VerbCommand)
def render(
    describe_json: Annotated[
        Path,
        typer.Argument(
            metavar="DESCRIBE_JSON",
            help="Saved output of `aws ec2 describe-instance-topology --output json`.",
            show_default=False,
        ),
    ],
    names_json: Annotated[
        Path | None,
        typer.Option(
            "--names",
            metavar="NAMES_JSON",
            help="JSON object: instance id -> Slurm node name (default: nodes named by instance id). "
            "Named instances EC2 does not describe go under the flat default switch.",
        ),
    ] = None,
) -> None:
    """Print the topology.conf the head's topology agent would write, and each node's switch."""
    from gpucluster.agents.ec2_topology import (
        TopologyError,
        build,
        leaf_of,
        parse_response,
        render_conf,
        topology_unit,
    )

    doc = _read_json(describe_json, "save the output of `aws ec2 describe-instance-topology --output json`")
    names = _names(names_json) if names_json is not None else None
    source = describe_json
    try:
        placements = parse_response(doc)
        if names is None:
            names = {placement.instance_id: placement.instance_id for placement in placements}
        source = names_json or describe_json
        described = {placement.instance_id for placement in placements}
        flat = [name for instance_id, name in names.items() if instance_id not in described]
        topology = build(placements, names, flat)
    except TopologyError as err:
        raise BadInput(source, err.field, err.what, err.fix) from err
    skipped = sorted(described - set(names))
    if skipped:
        warn_each([f"{len(skipped)} instance(s) not in {names_json}, left out: {', '.join(skipped)}"])
    header = f"topology.conf from {describe_json.name} (gpucluster topology render)"
    out.print(render_conf(topology, header), end="", highlight=False, markup=False, soft_wrap=True)
    leaves = leaf_of(topology)
    out.print("#\n# instance id -> node name: leaf (Topology= the head sets)", highlight=False, markup=False)
    by_name = {name: instance_id for instance_id, name in names.items()}
    for name in sorted(leaves):
        out.print(
            f"# {by_name[name]} -> {name}: {leaves[name]} ({topology_unit(topology.paths[name])})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )


@topology_app.command("annotations", cls=VerbCommand)
def annotate(
    describe_json: Annotated[
        Path,
        typer.Argument(
            metavar="DESCRIBE_JSON",
            help="Saved output of `aws ec2 describe-instance-topology --output json` for the nodes' "
            "instances.",
            show_default=False,
        ),
    ],
    nodes_json: Annotated[
        Path,
        typer.Option(
            "--nodes",
            metavar="NODES_JSON",
            help="Saved output of `kubectl get nodes -o json` (EKS); its compute nodes are placed.",
        ),
    ],
) -> None:
    """Print the `kubectl annotate` commands that place an EKS cluster's compute nodes in
    Slurm's topology, as the head places the same instances on EC2."""
    from gpucluster.agents.ec2_topology import TopologyError, parse_response
    from gpucluster.eks.topology import annotate_commands, node_annotations, parse_nodes, unplaced

    describe = _read_json(
        describe_json, "save the output of `aws ec2 describe-instance-topology --output json`"
    )
    nodes_doc = _read_json(nodes_json, "save the output of `kubectl get nodes -o json`")
    source = describe_json
    try:
        placements = parse_response(describe)
        source = nodes_json
        nodes = parse_nodes(nodes_doc)
        placed = node_annotations(nodes, placements)
    except TopologyError as err:
        raise BadInput(source, err.field, err.what, err.fix) from err
    for node in nodes:
        if not _KUBERNETES_NAME.fullmatch(node.name):
            raise BadInput(
                nodes_json,
                "metadata.name",
                f"{node.name!r} is not a Kubernetes node name (lower-case letters, digits, '-' and '.', "
                "a letter or digit at each end, at most 253 characters)",
                "save the output of `kubectl get nodes -o json` unchanged",
            )
    waiting = unplaced(nodes, placements)
    if waiting:
        names = ", ".join(waiting)
        warn_each([f"{len(waiting)} node(s) EC2 does not describe yet, flat until it does: {names}"])
    print_commands(out, annotate_commands(placed))

"""Compute nodes by name on every login and compute node: a block of /etc/hosts kept from
what slurmctld knows.

A compute node registers as a dynamic Slurm node (`<group>-<instance id>`) with its private
address as NodeAddr; nothing else names it, so without this `ssh <node>` from a login node
(pam_slurm_adopt) and `mpirun --host` inside a job cannot resolve it. A timer runs this
every 30 s on login and compute nodes, and the compute nodes' Prolog (the health check, once
its probes passed) runs it before every job, so each node of a job knows the others before the
job's first step (and before Enroot binds the file into the job's containers, which keep the
copy they started with).

Only the block between the markers is ours; every other line of the file stays as it was.
The file is replaced atomically, so a lookup never reads half of it. When slurmctld does
not answer the old block stays: a stale address is better than none while the head is down.
Standard library and other agents only: the nodes run it with the image's python3.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpucluster.agents import scontrol

LOG = logging.getLogger("node-hosts")
HOSTS_FILE = "/etc/hosts"
BEGIN = "# BEGIN gpucluster nodes: rewritten from slurmctld by gpucluster-node-hosts, edits here are lost"
END = "# END gpucluster nodes"
# RFC 1123 host names, lower case as Slurm's node names are: nothing else is written into
# a file every program on the node reads.
_HOST_NAME = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")


def node_addresses(records: Iterable[Mapping[str, str]]) -> dict[str, str]:
    """Node name -> address for the nodes `scontrol -o show nodes` printed with an IP
    address as NodeAddr (a node that has not registered yet shows its name there)."""
    addresses = {}
    for record in records:
        name, address = record.get("NodeName", ""), record.get("NodeAddr", "")
        if not _HOST_NAME.fullmatch(name):
            LOG.warning("skipping node %r: not a host name", name)
            continue
        try:
            addresses[name] = str(ipaddress.ip_address(address))
        except ValueError:
            continue
    return dict(sorted(addresses.items()))


def with_block(hosts: str, addresses: Mapping[str, str]) -> str:
    """`hosts` with our block (the old one dropped wherever it was) at its end."""
    lines = hosts.splitlines()
    kept, index = [], 0
    while index < len(lines):
        if lines[index] == BEGIN and END in lines[index:]:
            index = lines.index(END, index) + 1
            continue
        # A marker without its END (an edit gone wrong): the lines after it are not ours.
        if lines[index] != BEGIN:
            kept.append(lines[index])
        index += 1
    block = [BEGIN, *(f"{address} {name}" for name, address in addresses.items()), END]
    return "\n".join([*kept, *block]) + "\n"


def replace_file(path: Path, text: str) -> bool:
    """Write `text` to `path` unless it already holds it; False when nothing changed.
    A temporary file beside it is renamed over it, so a reader sees the old or the new file."""
    try:
        current = path.read_text()
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        current, mode = None, 0o644
    if current == text:
        return False
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return True


def refresh(hosts_file: Path, run: scontrol.Runner = scontrol.run_command) -> bool:
    """Rewrite the block from slurmctld's nodes; True when the file changed."""
    result = scontrol.checked(run(["scontrol", "-o", "show", "nodes"]))
    addresses = node_addresses(scontrol.parse_records(result.stdout))
    try:
        current = hosts_file.read_text()
    except FileNotFoundError:
        current = ""
    changed = replace_file(hosts_file, with_block(current, addresses))
    LOG.info("%s: %d nodes, %s", hosts_file, len(addresses), "rewritten" if changed else "unchanged")
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts-file", type=Path, default=Path(HOSTS_FILE))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="gpucluster[node-hosts] %(message)s")
    try:
        refresh(args.hosts_file)
    except scontrol.ScontrolError as error:
        LOG.error("%s; %s keeps its last block of nodes", error, args.hosts_file)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

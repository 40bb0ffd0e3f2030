"""Compute nodes by name on real daemons: each job's Prolog (the health check, once its
probes passed) writes every registered node's address into the hosts file before the job runs, glibc
resolves the names from it, and the login node's timer program does the same through its
sackd. The suite's nodes keep the file under the cluster's root, not the machine's /etc/hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.agents import node_hosts
from tests.integration.cluster import SlurmCluster
from tests.integration.host import run
from tests.integration.login import LoginNode

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 60


def _block(hosts: Path) -> dict[str, str]:
    lines = hosts.read_text().splitlines()
    inside = lines[lines.index(node_hosts.BEGIN) + 1 : lines.index(node_hosts.END)]
    return {name: address for address, name in (line.split() for line in inside)}


def _registered(cluster: SlurmCluster) -> dict[str, str]:
    return {name: node.address for name, node in cluster.nodes.items()}


def test_a_jobs_prolog_names_every_node_and_glibc_resolves_them(cluster: SlurmCluster):
    hosts = Path(cluster.site.hosts_file)
    # What the machine had: only a Prolog run can bring the block back.
    hosts.write_text("127.0.0.1 localhost\n")
    job = cluster.submit(f"--nodes={len(cluster.nodes)}", script="srun true\n")
    info = cluster.wait_job_state(job, {"COMPLETED", "FAILED"}, JOB_TIMEOUT)
    assert info["JobState"] == "COMPLETED", info
    assert _block(hosts) == _registered(cluster)
    assert hosts.read_text().startswith("127.0.0.1 localhost\n")
    name, address = next(iter(_registered(cluster).items()))
    # The file as a node's /etc/hosts, for glibc's own lookup.
    lookup = 'mount --bind "$0" /etc/hosts && getent hosts "$1"'
    resolved = run("unshare", "--mount", "sh", "-c", lookup, str(hosts), name)
    assert resolved.stdout.split() == [address, name]


def test_the_login_nodes_program_names_the_nodes_through_sackd(cluster: SlurmCluster, slurm_login: LoginNode):
    hosts = Path(cluster.site.hosts_file)
    hosts.write_text("127.0.0.1 localhost\n")
    slurm_login.run(cluster.site.node_hosts_program)
    assert _block(hosts) == _registered(cluster)

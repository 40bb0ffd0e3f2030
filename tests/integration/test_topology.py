"""The tree topology on the real slurmctld: the rendered slurm.conf with topology/tree and
the topology.conf seed load, the head's topology agent places dynamic nodes where a fake
EC2 (botocore's Stubber) says they are, an unplaced node takes no job, and `--switches=1`
keeps a job under one leaf or makes it wait (and spread once its wait is over).

The session cluster runs topology/flat (nothing places its nodes); this module restarts
its controller with topology/tree and restores flat afterwards, as test_head_controller
restarts it with the head's unit."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from gpucluster.agents import topology_agent
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from tests.integration.cluster import ComputeNode, SlurmCluster
from tests.integration.host import HarnessError
from tests.integration.queries import node_states
from tests.integration.test_head_agents import scontrol_runner
from tests.slurm.conf_text import conf_line_of

pytestmark = pytest.mark.slurm

# Namespaces 3 and 4 are other tests' spare nodes, 5 the login node's.
# Namespaces live until the session ends, so these indices are this file's alone (20-29).
EXTRA = {21: "i-0a1b2c3d4e5f60021", 22: "i-0a1b2c3d4e5f60022"}
# Two leaves under one spine, each holding one session node and one extra node, so the
# first two nodes in name order (60001, 60002) are under different leaves.
LEAVES = {
    "i-0a1b2c3d4e5f60001": "nn-leaf-a",
    "i-0a1b2c3d4e5f60022": "nn-leaf-a",
    "i-0a1b2c3d4e5f60002": "nn-leaf-b",
    "i-0a1b2c3d4e5f60021": "nn-leaf-b",
}
TIMEOUT = 30


def _answer() -> dict:
    return {
        "Instances": [
            {
                "InstanceId": instance_id,
                "InstanceType": "p5.48xlarge",
                "NetworkNodes": ["nn-top", "nn-spine", leaf],
                "AvailabilityZone": "us-east-2a",
                "ZoneId": "use2-az1",
            }
            for instance_id, leaf in sorted(LEAVES.items())
        ]
    }


def _restart_with(cluster: SlurmCluster, plugin: str) -> None:
    site = dataclasses.replace(cluster.site, topology_plugin=plugin)
    files = slurm_conf.render_slurm_files(resolve(cluster.cfg), site, cluster.accounting)
    Path(site.config_dir, "slurm.conf").write_text(files.slurm_conf)
    cluster.stop_controller(hard=False)
    cluster.start_controller()


def _leaf_of(cluster: SlurmCluster) -> dict[str, str]:
    """Node -> leaf switch, from `scontrol show topology`."""
    leaves = {}
    for line in cluster.slurm("scontrol", "show", "topology").stdout.splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if fields.get("Level") == "0" and fields.get("Nodes"):
            hosts = cluster.slurm("scontrol", "show", "hostnames", fields["Nodes"]).stdout.split()
            leaves.update(dict.fromkeys(hosts, fields["SwitchName"]))
    return leaves


def _running(cluster: SlurmCluster, job_id: str, timeout: float = 60) -> None:
    """Wait for the job to run; a failure says why it did not (its Reason)."""
    try:
        cluster.wait_job_state(job_id, {"RUNNING"}, timeout)
    except HarnessError as err:
        info = cluster.job_info(job_id)
        raise HarnessError(f"{err}; job {job_id} is {info['JobState']}, Reason={info['Reason']}") from None


def _all_free(cluster: SlurmCluster) -> None:
    busy = {"ALLOCATED", "MIXED", "COMPLETING"}
    for name in cluster.nodes:
        cluster.wait_node_state(name, lambda s: "IDLE" in s and not s & busy, "to be free", TIMEOUT)


def _job_nodes(cluster: SlurmCluster, job_id: str) -> list[str]:
    info = cluster.job_info(job_id)
    return cluster.slurm("scontrol", "show", "hostnames", info["NodeList"]).stdout.split()


@pytest.fixture(scope="module")
def tree(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    cluster = slurm_cluster
    extra: list[ComputeNode] = []
    try:
        _restart_with(cluster, "topology/tree")
        for index, instance_id in EXTRA.items():
            node = cluster.add_node(index, instance_id)
            node.start(conf_line_of(cluster.cfg, cluster.group))
            extra.append(node)
        for name in cluster.nodes:
            cluster.wait_node_state(name, lambda s: "IDLE" in s, "to register IDLE", TIMEOUT)
        yield cluster
    finally:
        cluster.slurm("scancel", "--full", "--user=root", check=False)
        # slurmctld deletes a dynamic node that holds no job (node_mgr.c, _delete_node_ptr)
        # whether or not it has noticed its slurmd is gone: no wait for DOWN.
        _all_free(cluster)
        for node in extra:
            node.kill()
            cluster.nodes.pop(node.name, None)
            cluster.slurm("scontrol", "delete", f"NodeName={node.name}")
        for name in cluster.nodes:
            cluster.slurm("scontrol", "update", f"NodeName={name}", "Topology=", check=False)
        _restart_with(cluster, "topology/flat")
        for name in cluster.nodes:
            cluster.wait_node_state(name, lambda s: "IDLE" in s, "to be IDLE again", TIMEOUT)


def _submit(cluster: SlurmCluster, *args: str) -> str:
    return cluster.submit(
        "--gpus-per-node=8", "--cpus-per-task=1", "--output=/dev/null", *args, script="sleep 300\n"
    )


def test_unplaced_nodes_count_for_no_job_and_the_agent_places_each_under_its_leaf(
    tree: SlurmCluster, tmp_path
):
    cluster = tree
    assert "topology/tree" in cluster.slurm("scontrol", "show", "config").stdout
    # The seed only: the root and the flat default, no node in any switch.
    assert _leaf_of(cluster) == {}
    # slurmctld counts no unplaced node for any job: with none placed it refuses one outright.
    refused = cluster.slurm("sbatch", "-N1", "--time=5", "--output=/dev/null", "--wrap=true", check=False)
    assert refused.returncode != 0
    assert "Requested topology configuration is not available" in refused.stderr, refused.stderr

    ec2 = boto3.client("ec2", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    stub = Stubber(ec2)
    stub.add_response("describe_instance_topology", _answer(), {"InstanceIds": sorted(LEAVES)})
    conf = tmp_path / "topology.conf"
    with stub:
        assert topology_agent.run_once(ec2, scontrol_runner(cluster), conf) == 0
    expected = {slurm_conf.node_name(cluster.group.name, iid): leaf for iid, leaf in LEAVES.items()}
    assert _leaf_of(cluster) == expected
    for name, leaf in expected.items():
        assert cluster.node_info(name)["Topology"] == f"default:ec2:nn-top:nn-spine:{leaf}"
    placed = _submit(cluster, "-N1", "--time=5")
    _running(cluster, placed)
    cluster.slurm("scancel", placed)

    # The file the agent wrote is one slurmctld loads: restart on it, the places stay.
    Path(cluster.site.config_dir, "topology.conf").write_text(conf.read_text())
    cluster.stop_controller(hard=False)
    cluster.start_controller()
    assert _leaf_of(cluster) == expected


def test_switches_1_lands_under_one_leaf_or_waits_then_spreads(tree: SlurmCluster):
    cluster = tree
    leaves = _leaf_of(cluster)
    assert len(set(leaves.values())) == 2, "the previous test placed the nodes"
    _all_free(cluster)

    # Room under a leaf: both nodes under the same one, although the first two nodes by
    # name sit under different leaves.
    together = _submit(cluster, "-N2", "--switches=1", "--time=5")
    _running(cluster, together)
    assert len({leaves[node] for node in _job_nodes(cluster, together)}) == 1
    cluster.slurm("scancel", together)
    _all_free(cluster)

    # One node busy under each leaf: no leaf has room for two.
    by_leaf: dict[str, list[str]] = {}
    for node, leaf in sorted(leaves.items()):
        by_leaf.setdefault(leaf, []).append(node)
    blockers = [_submit(cluster, "-N1", f"--nodelist={nodes[0]}", "--time=5") for nodes in by_leaf.values()]
    for job in blockers:
        _running(cluster, job)
    # The one that may spread first: the scheduler takes jobs in priority (submit) order.
    hasty = _submit(cluster, "-N2", "--switches=1@0:10", "--time=5")
    patient = _submit(cluster, "-N2", "--switches=1@10:00", "--time=5")
    time.sleep(6)
    assert cluster.job_info(patient)["JobState"] == "PENDING"
    # Its wait over, a job spreads over two leaves (Slurm's --switches count@max-time).
    _running(cluster, hasty)
    assert len({leaves[node] for node in _job_nodes(cluster, hasty)}) == 2
    assert cluster.job_info(patient)["JobState"] == "PENDING"
    cluster.slurm("scancel", hasty, blockers[0])
    _running(cluster, patient)
    assert len({leaves[node] for node in _job_nodes(cluster, patient)}) == 1
    cluster.slurm("scancel", "--user=root")
    for name in cluster.nodes:
        assert "DOWN" not in node_states(cluster.node_info(name))


def test_a_node_that_registers_with_its_topology_is_placed_at_once_and_leaves_with_it(tree: SlurmCluster):
    """`slurmd -Z --conf "... Topology=default:ec2:..."` (Slurm 25.11's dynamic topology): the
    node is under its leaf from its registration, a switch slurmctld did not know is created
    under the known spine, and `scontrol delete` takes the node out of every switch."""
    cluster = tree
    node = cluster.add_node(23, "i-0a1b2c3d4e5f60023")
    unit = "default:ec2:nn-top:nn-spine:nn-leaf-c"
    try:
        node.start(f"{conf_line_of(cluster.cfg, cluster.group)} Topology={unit}")
        cluster.wait_node_state(node.name, lambda s: "IDLE" in s, "to register IDLE", TIMEOUT)
        assert _leaf_of(cluster)[node.name] == "nn-leaf-c"
        assert cluster.node_info(node.name)["Topology"] == unit
        job = _submit(cluster, "-N1", f"--nodelist={node.name}", "--time=5")
        _running(cluster, job)
        cluster.slurm("scancel", job)
        _all_free(cluster)
    finally:
        node.kill()
        cluster.nodes.pop(node.name, None)
    cluster.slurm("scontrol", "delete", f"NodeName={node.name}")
    assert node.name not in _leaf_of(cluster)

"""The rendered Slurm configuration on real daemons: registration, jobs, and the faults
a GPU cluster meets (controller restart, a node dying mid-job, a failing health check)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gpucluster import names
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm_release import PINNED_SLURM
from tests.integration.cluster import SlurmCluster
from tests.integration.host import wait_for
from tests.integration.queries import node_states
from tests.slurm.conf_text import conf_line_of

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 30
# slurmctld marks a silent node DOWN after SlurmdTimeout (5 s in the test site) plus up
# to a ping cycle; the requeued job then waits cred_expire (5 s) before it may restart.
NODE_DOWN_TIMEOUT = 45
SRV_NODE = (4, "i-0a1b2c3d4e5f60004")


def node_rows(cluster: SlurmCluster) -> dict[str, list[dict[str, str]]]:
    """sinfo, one row per (node, partition)."""
    out = cluster.slurm("sinfo", "-h", "-N", "-o", "%N|%T|%G|%f|%P").stdout
    rows: dict[str, list[dict[str, str]]] = {}
    for line in out.splitlines():
        name, state, gres, features, partition = line.split("|")
        rows.setdefault(name, []).append(
            {"state": state, "gres": gres, "features": features, "partition": partition.rstrip("*")}
        )
    return rows


def test_nodes_register_idle_with_gpus_features_and_partitions(cluster: SlurmCluster):
    group = cluster.group
    rows = node_rows(cluster)
    assert set(rows) == set(cluster.nodes)
    for name in cluster.nodes:
        assert {row["partition"] for row in rows[name]} == {group.name, slurm_conf.SPANNING_PARTITION}
        for row in rows[name]:
            assert row["state"] == "idle"
            # (S:0-1): the GPUs are bound to cores on sockets 0 and 1 (gres.conf Cores=).
            assert row["gres"] == f"gpu:{group.instance.slurm_gpu_type}:8(S:0-1)"
            assert row["features"].split(",") == [group.name, group.instance_type]
        info = cluster.node_info(name)
        assert "DYNAMIC_NORM" in node_states(info)
        assert info["NodeAddr"] == cluster.nodes[name].address
        assert info["RealMemory"] == str(slurm_conf.real_memory_mib(resolve(cluster.cfg).group(group.name)))
    default = cluster.slurm("scontrol", "-o", "show", "partition", slurm_conf.SPANNING_PARTITION)
    assert "Default=YES" in default.stdout


def test_two_node_job_runs_one_task_per_node_with_eight_gpus(cluster: SlurmCluster):
    out = cluster.root / "jobs" / "two-node.out"
    job = cluster.submit(
        "--nodes=2",
        "--ntasks-per-node=1",
        "--gpus-per-node=8",
        "--cpus-per-task=1",
        f"--output={out}",
        script="srun bash -c 'echo task node=$SLURM_NODEID host=$SLURMD_NODENAME"
        " gpus=$CUDA_VISIBLE_DEVICES'\n",
    )
    info = cluster.wait_job_state(job, {"COMPLETED", "FAILED", "CANCELLED"}, JOB_TIMEOUT)
    assert info["JobState"] == "COMPLETED", out.read_text() if out.exists() else info
    tasks = [line.split() for line in out.read_text().splitlines() if line.startswith("task ")]
    assert len(tasks) == 2
    fields = [dict(item.split("=", 1) for item in task[1:]) for task in tasks]
    assert sorted(f["node"] for f in fields) == ["0", "1"]
    assert {f["host"] for f in fields} == set(cluster.nodes)
    for f in fields:
        assert len(f["gpus"].split(",")) == 8


def test_pending_and_running_jobs_survive_a_controller_restart(cluster: SlurmCluster):
    marker = cluster.root / "jobs" / "after-restart.out"
    running = cluster.submit(
        "--nodes=1",
        "--gpus-per-node=8",
        "--cpus-per-task=1",
        "--output=/dev/null",
        script="sleep 300\n",
    )
    running_info = cluster.wait_job_state(running, {"RUNNING"}, JOB_TIMEOUT)
    # Needs every GPU of both nodes, so it waits for the running job.
    pending = cluster.submit(
        "--nodes=2",
        "--gpus-per-node=8",
        "--cpus-per-task=1",
        f"--output={marker}",
        script="echo ran on $SLURM_JOB_NODELIST\n",
    )
    submitted = time.time()
    wait_for(
        "the 2-node job to wait for resources",
        lambda: cluster.job_info(pending)["Reason"] == "Resources",
        JOB_TIMEOUT,
    )
    # slurmctld writes its state in the background a moment after a change; a crash
    # before that write loses the change, so the crash comes after it.
    cluster.wait_state_saved(since=submitted)

    cluster.stop_controller(hard=True)
    cluster.start_controller()

    after = cluster.job_info(running)
    assert after["JobState"] == "RUNNING"
    assert after["NodeList"] == running_info["NodeList"]
    assert cluster.job_info(pending)["JobState"] == "PENDING"
    for name in cluster.nodes:
        cluster.wait_node_state(name, lambda s: "NOT_RESPONDING" not in s, "to answer", JOB_TIMEOUT)
    cluster.slurm("scancel", running)
    assert cluster.wait_job_state(pending, {"COMPLETED"}, JOB_TIMEOUT)
    assert marker.read_text().startswith("ran on ")


def test_failing_health_check_drains_the_node_and_it_gets_no_new_jobs(cluster: SlurmCluster):
    sick, healthy = sorted(cluster.nodes)
    override = cluster.gpu_override_dir / sick
    override.write_text("7\n")
    try:
        info = cluster.wait_node_state(sick, lambda s: "DRAIN" in s, "to be drained", JOB_TIMEOUT)
        assert info["Reason"].startswith("healthcheck: GPU count 7, want 8"), info["Reason"]
        assert "DRAIN" not in node_states(cluster.node_info(healthy))

        pinned = cluster.submit(
            f"--nodelist={sick}",
            "--gpus-per-node=1",
            "--cpus-per-task=1",
            "--output=/dev/null",
            script="true\n",
        )
        free = [
            cluster.submit("--gpus-per-node=8", "--cpus-per-task=1", "--output=/dev/null", script="true\n")
            for _ in range(2)
        ]
        for job in free:
            done = cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
            assert done["NodeList"] == healthy
        pending = cluster.job_info(pinned)
        assert pending["JobState"] == "PENDING"
        assert "ReqNodeNotAvail" in pending["Reason"]
    finally:
        override.unlink()
        cluster.slurm("scancel", "--user=root")
        cluster.slurm("scontrol", "update", f"NodeName={sick}", "State=RESUME")
    cluster.wait_node_state(sick, lambda s: "IDLE" in s and "DRAIN" not in s, "to resume", JOB_TIMEOUT)


def test_node_killed_mid_job_goes_down_and_the_job_completes_on_another(cluster: SlurmCluster):
    out = cluster.root / "jobs" / "requeue.out"
    job = cluster.submit(
        "--requeue",
        "--open-mode=append",
        "--nodes=1",
        "--gpus-per-node=8",
        "--cpus-per-task=1",
        f"--output={out}",
        # The first run outlives the test; the requeued run finishes at once.
        script='echo "run restart=${SLURM_RESTART_COUNT:-0} host=$SLURMD_NODENAME"\n'
        'if [[ "${SLURM_RESTART_COUNT:-0}" == 0 ]]; then sleep 300; fi\n',
    )
    first = cluster.wait_job_state(job, {"RUNNING"}, JOB_TIMEOUT)["NodeList"]
    wait_for("the first run to start", lambda: out.exists() and "restart=0" in out.read_text(), JOB_TIMEOUT)
    victim = cluster.nodes[first]
    victim.kill()
    try:
        cluster.wait_node_state(first, lambda s: "DOWN" in s, "to be DOWN", NODE_DOWN_TIMEOUT)
        done = cluster.wait_job_state(job, {"COMPLETED"}, NODE_DOWN_TIMEOUT)
        survivor = next(name for name in cluster.nodes if name != first)
        assert done["NodeList"] == survivor
        assert int(done["Restarts"]) == 1
        runs = [line for line in out.read_text().splitlines() if line.startswith("run ")]
        assert runs == [f"run restart=0 host={first}", f"run restart=1 host={survivor}"]
    finally:
        victim.start(conf_line_of(cluster.cfg, cluster.group))
    # The replacement registers under the same name; ReturnToService=2 puts it back in service.
    cluster.wait_node_state(first, lambda s: "IDLE" in s and "DOWN" not in s, "to return", JOB_TIMEOUT)


def test_explicit_plugstack_include_reaches_configless_nodes(cluster: SlurmCluster):
    """slurmctld serves plugstack.conf, and slurmd follows its explicit include line to the
    node-local Pyxis file (Slurm 22.05 and 24.11 serve plugstack.conf but not the files it
    includes: compute and login bootstraps install that file). That file alone names Pyxis,
    and slurmd loaded it: Pyxis logs its version when slurmd initialises it."""
    name = sorted(cluster.nodes)[0]
    cached = cluster.root / "spool" / name / "conf-cache"
    # fake_gpus.conf is the suite's stand-in for NVML (site_files.write_fake_nvml), not served.
    served = sorted(path.name for path in cached.iterdir() if path.name != "fake_gpus.conf")
    # topology.conf: the head's seed (ec2, flat), which slurmctld serves beside the others.
    assert served == ["cgroup.conf", "gres.conf", "plugstack.conf", "slurm.conf", "topology.conf"]
    assert (cached / "plugstack.conf").read_text() == cluster.root.joinpath(
        "etc", "plugstack.conf"
    ).read_text()
    log = Path(cluster.site.slurmd_log_file.replace("%n", name)).read_text()
    # Seen on 22.05.8 with Pyxis 0.24.0: "pyxis: version v0.24.0".
    assert "pyxis: version v" in log, log


def test_node_finds_the_controller_by_its_srv_record(cluster: SlurmCluster):
    """The alternative to --conf-server: the `_slurmctld._tcp` SRV record of the private
    zone (the Cluster stack creates it), served here by dnsmasq on the bridge."""
    cfg = cluster.cfg
    zone = names.private_zone(cfg)
    resolv_conf = cluster.dns()
    node = cluster.add_node(*SRV_NODE)
    try:
        node.start(conf_line_of(cfg, cluster.group), resolv_conf=resolv_conf)
        info = cluster.wait_node_state(node.name, lambda s: "IDLE" in s, "to register", JOB_TIMEOUT)
        assert info["NodeAddr"] == node.address
        queries = (cluster.root / "log" / "dnsmasq.log").read_text()
        assert f"query[SRV] _slurmctld._tcp.{zone}" in queries
        assert f"query[A] {names.controller_host(cfg)}" in queries
        job = cluster.submit(
            f"--nodelist={node.name}",
            "--gpus-per-node=8",
            "--cpus-per-task=1",
            "--output=/dev/null",
            script="true\n",
        )
        assert cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)["NodeList"] == node.name
    finally:
        node.kill()
        cluster.nodes.pop(node.name)
        cluster.slurm("scontrol", "delete", f"NodeName={node.name}", check=False)


def test_a_job_can_open_only_the_gpus_it_was_given(cluster: SlurmCluster):
    """cgroup.conf ConstrainDevices=yes: a job's device cgroup refuses the GPUs it was not
    given (the fake GPUs are /dev/tty0-7, which root can open outside a job)."""
    if cluster.tracking.why is not None:
        pytest.skip(f"device confinement needs the cgroup plugins: {cluster.tracking.why}")
    out = cluster.root / "jobs" / "devices.out"
    job = cluster.submit(
        "--gpus-per-node=2",
        "--cpus-per-task=1",
        f"--output={out}",
        script='echo "gpus=$CUDA_VISIBLE_DEVICES"\n'
        'for n in 0 1 2 7; do if (exec 3</dev/tty$n) 2>/dev/null; then echo "tty$n open"; '
        'else echo "tty$n refused"; fi; done\n',
    )
    assert cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)
    assert out.read_text().splitlines() == [
        "gpus=0,1",
        "tty0 open",
        "tty1 open",
        "tty2 refused",
        "tty7 refused",
    ]


def test_the_tree_fans_out_to_dynamic_nodes(cluster: SlurmCluster):
    """No flat tree (TreeWidth=65533, a 22.05/23.02 workaround): the pinned Slurm fans
    controller messages out through slurmd to dynamic nodes."""
    config = cluster.slurm("scontrol", "show", "config").stdout
    width = re.search(r"^TreeWidth\s*=\s*(\d+)", config, re.MULTILINE)
    assert width is not None, config
    assert width[1] != "65533"


def test_the_cluster_runs_the_pinned_release(cluster: SlurmCluster):
    """Every daemon the suite started is the pinned build: the controller and each node."""
    assert cluster.slurm("scontrol", "--version").stdout.split() == ["slurm", PINNED_SLURM]
    for name in cluster.nodes:
        assert (cluster.node_info(name) or {}).get("Version") == PINNED_SLURM

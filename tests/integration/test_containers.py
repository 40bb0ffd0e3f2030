"""`srun --container-image` for real: Pyxis and Enroot built from the vendored sources, the
enroot.conf, hooks, plugstack.conf and Pyxis include as gpucluster renders them (only
paths differ, through the test site), and an image the suite makes itself.

The image is a busybox root whose /etc/os-release says ID=gpucluster-test-image, so
output that names it came from inside the container, not from the host.
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from pathlib import Path

import pytest

from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from tests.integration.accounting_daemons import ACCOUNT_USER
from tests.integration.cluster import SlurmCluster
from tests.integration.containers import (
    IMAGE_OS_ID,
    EnrootNode,
    busybox_image,
    enroot,
    install_enroot,
    node_local_path,
)
from tests.integration.host import run, wait_for
from tests.integration.login import LoginNode
from tests.integration.prerequisites import unavailable
from tests.integration.vendor_builds import enroot_root

pytestmark = pytest.mark.slurm

# A container start unpacks the image and runs the hooks: seconds, not minutes.
STEP_TIMEOUT = 120
JOB_TIMEOUT = 120


@pytest.fixture(scope="module")
def enroot_node(slurm_cluster: SlurmCluster) -> EnrootNode:
    """Enroot as the session cluster's nodes have it (installed before slurmd started)."""
    cluster = slurm_cluster
    return install_enroot(enroot_root(), cluster.cfg, cluster.group, cluster.root)


@pytest.fixture(scope="module")
def image() -> Path:
    return busybox_image()


def _host_os_id() -> str:
    for line in Path("/etc/os-release").read_text().splitlines():
        if line.startswith("ID="):
            return line
    raise AssertionError("/etc/os-release has no ID=")


def _srun(cluster: SlurmCluster, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """srun on the controller's side: the client reads the cluster's slurm.conf and plugstack.conf."""
    return cluster.slurm("srun", f"--chdir={cluster.root / 'jobs'}", *args, check=check, timeout=STEP_TIMEOUT)


def _batch(cluster: SlurmCluster, name: str, script: str, *args: str) -> Path:
    """Runs `script` as a batch job (on a compute node) to completion; returns its output."""
    output = cluster.root / "jobs" / f"{name}-{os.getpid()}.out"
    job = cluster.submit(f"--output={output}", *args, script=script)
    info = cluster.wait_job_state(
        job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"}, JOB_TIMEOUT
    )
    text = output.read_text() if output.exists() else "(no output)"
    assert info["JobState"] == "COMPLETED", f"job {job} {info['JobState']}:\n{text}"
    return output


def test_rendered_enroot_conf_serves_create_export_and_import(
    slurm_cluster: SlurmCluster, enroot_node: EnrootNode, image: Path
):
    """What a user runs by hand on a node: the rendered squash options are ones mksquashfs
    takes, and `enroot import` finds its temporary directory (it fails only on the network)."""
    install = slurm_cluster.install
    name = f"direct-{os.getpid()}"
    enroot(install, enroot_node, "create", "--name", name, str(image))
    started = enroot(install, enroot_node, "start", name, "cat", "/etc/os-release")
    assert f"ID={IMAGE_OS_ID}" in started.stdout.splitlines()

    exported = Path(enroot_node.paths.temp) / f"{name}.sqsh"
    enroot(install, enroot_node, "export", "--output", str(exported), name)
    superblock = run("unsquashfs", "-s", str(exported)).stdout
    assert "Compression lz4" in superblock and "Block size 262144" in superblock, superblock
    enroot(install, enroot_node, "remove", "--force", name)

    # Nothing listens on port 1: the import gets as far as the registry and no further.
    refused = enroot(
        install,
        enroot_node,
        "import",
        "--output",
        str(exported) + ".import",
        "docker://127.0.0.1:1#gpucluster/none:1",
        check=False,
    )
    assert refused.returncode != 0
    assert "mktemp" not in refused.stderr, refused.stderr
    assert "127.0.0.1 port 1" in refused.stderr, refused.stderr


def test_login_srun_runs_in_the_image(
    cluster: SlurmCluster, slurm_login: LoginNode, enroot_node: EnrootNode, image: Path
):
    """From the login namespace, with no slurm.conf of its own: its srun loads Pyxis from the
    plugstack.conf sackd fetched (24.11) or slurmctld served (22.05, found by SRV record)."""
    step = slurm_login.run(
        "srun",
        f"--chdir={cluster.root / 'jobs'}",
        "--nodes=1",
        f"--container-image={image}",
        "cat",
        "/etc/os-release",
        timeout=STEP_TIMEOUT,
    )
    lines = step.stdout.splitlines()
    assert f"ID={IMAGE_OS_ID}" in lines, step.stdout
    assert _host_os_id() not in lines


def test_compute_node_srun_runs_in_the_image(cluster: SlurmCluster, enroot_node: EnrootNode, image: Path):
    output = _batch(
        cluster, "os-release", f"srun --container-image={image} cat /etc/os-release\n", "--nodes=1"
    )
    lines = output.read_text().splitlines()
    assert f"ID={IMAGE_OS_ID}" in lines, lines
    assert _host_os_id() not in lines


def _shared_mount(cluster: SlurmCluster) -> tuple[Path, str]:
    """A shared file system (FSx, else /home) where the test nodes have it, and its
    production path, where the job mounts it in the container."""
    on_host = slurm_conf.required_mounts(resolve(cluster.cfg), cluster.site)[-1]
    return Path(on_host), on_host.removeprefix(cluster.site.mount_root)


def test_two_node_step_sees_its_rank_mounts_and_named_container(
    cluster: SlurmCluster, enroot_node: EnrootNode, image: Path
):
    on_host, on_node = _shared_mount(cluster)
    results = on_host / f"containers-{os.getpid()}"
    results.mkdir()
    inside = f"{on_node}/{results.name}"
    mounts = f"--container-mounts={on_host}:{on_node}"
    report = (
        'printf "%s %s %s %s %s %s\\n" "$SLURMD_NODENAME" "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" '
        f'"$MASTER_ADDR" "$MASTER_PORT" > {inside}/rank-$RANK && echo "$RANK" > /kept'
    )
    script = (
        "set -euo pipefail\n"
        f"srun --ntasks-per-node=1 --container-image={image} --container-name=train "
        f"{mounts} sh -c '{report}'\n"
        # The second step names the container only: Pyxis starts the one the first step left,
        # whose root file system (writable, ENROOT_ROOTFS_WRITABLE) still holds /kept.
        f"srun --ntasks-per-node=1 --container-name=train {mounts} "
        f"sh -c 'cat /kept > {inside}/reused-$SLURM_PROCID'\n"
        "echo $SLURM_JOB_ID\n"
    )
    output = _batch(cluster, "two-node", script, "--nodes=2")
    job = int(output.read_text().split()[-1])
    rows = [(results / f"rank-{rank}").read_text().split() for rank in (0, 1)]
    assert sorted(row[0] for row in rows) == sorted(cluster.nodes)
    # MASTER_ADDR is the step's first node, where rank 0 runs (which node that is follows the
    # order the dynamic nodes registered in, not their names).
    rank0_node = rows[0][0]
    for rank, row in enumerate(rows):
        # RANK and LOCAL_RANK: Pyxis, per task; WORLD_SIZE, MASTER_*: the 50-slurm-pytorch hook.
        assert row[1:] == [str(rank), "0", "2", rank0_node, str(job % 4536 + 61000)], row
    reused = {path.read_text().strip() for path in results.glob("reused-*")}
    assert reused == {"0", "1"}, reused


def test_pmix_step_gets_the_pmi_hook_environment_and_mount(
    cluster: SlurmCluster, enroot_node: EnrootNode, image: Path
):
    """As the containerised nccl-tests run (--mpi=pmix): the 50-slurm-pmi hook hands the
    step's PMIx server directory to the container. The image has no such path, so only the
    hook's mount makes it a directory there. One node: Slurm's PMIx makes a per-step
    directory in /tmp, which the test nodes share (on EC2 each node has its own /tmp)."""
    step = _srun(
        cluster,
        "--nodes=1",
        "--ntasks=2",
        "--mpi=pmix",
        f"--container-image={image}",
        "sh",
        "-c",
        'test -n "$PMIX_SERVER_TMPDIR" && test -d "$PMIX_SERVER_TMPDIR" && echo "mounted $PMIX_RANK"',
        check=False,
    )
    if "can not load PMIx library" in step.stderr:
        # Slurm's mpi/pmix dlopens the unversioned libpmix.so, which only the -dev package has.
        unavailable("run a PMIx step", "Slurm's mpi/pmix finds no libpmix.so (apt-get install libpmix-dev)")
    assert sorted(step.stdout.splitlines()) == ["mounted 0", "mounted 1"], step.stdout + step.stderr


def test_unprivileged_user_gets_its_own_enroot_directories(
    cluster: SlurmCluster, enroot_node: EnrootNode, image: Path
):
    """Users are not root: Pyxis runs Enroot as the job's user, which makes its user-<uid>
    directories, private, below the sticky parents the bootstrap makes on the node's NVMe."""
    user = pwd.getpwnam(ACCOUNT_USER)
    name = sorted(cluster.nodes)[0]
    as_user = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    step = cluster.slurm(
        *as_user,
        "srun",
        "--chdir=/tmp",
        f"--nodelist={name}",
        f"--container-image={image}",
        "sh",
        "-c",
        "id -u; cat /etc/os-release",
        timeout=STEP_TIMEOUT,
    )
    lines = step.stdout.splitlines()
    assert lines[0] == str(user.pw_uid) and f"ID={IMAGE_OS_ID}" in lines, step.stdout
    for parent in (enroot_node.paths.data, enroot_node.paths.cache, enroot_node.paths.runtime):
        mine = Path(node_local_path(cluster.root, name, parent)) / f"user-{user.pw_uid}"
        assert mine.is_dir(), f"{mine} is missing"
        assert (mine.stat().st_uid, stat.S_IMODE(mine.stat().st_mode)) == (user.pw_uid, 0o700)


def test_bad_image_fails_the_step_and_leaves_nodes_idle(cluster: SlurmCluster, enroot_node: EnrootNode):
    missing = cluster.root / "no-such-image.sqsh"
    failed = _srun(cluster, "--nodes=1", f"--container-image={missing}", "true", check=False)
    assert failed.returncode != 0
    # Seen on 22.05.8 with Pyxis 0.24.0 and Enroot 4.1.2:
    # "pyxis: failed to create container filesystem for image: <path>", then Enroot's log
    # "[ERROR] No such file or directory: <path>".
    assert f"pyxis: failed to create container filesystem for image: {missing}" in failed.stderr, (
        failed.stderr
    )
    assert f"No such file or directory: {missing}" in failed.stderr, failed.stderr
    for name in cluster.nodes:
        cluster.wait_node_state(
            name, lambda states: "IDLE" in states and "DRAIN" not in states, "to stay IDLE, not drained", 30
        )


def test_a_named_container_lives_as_long_as_its_job(
    cluster: SlurmCluster, enroot_node: EnrootNode, image: Path
):
    """container_scope=job (the rendered Pyxis include): during the job the container is
    pyxis_<job id>_<name> on the node's NVMe; Pyxis's job epilog removes it afterwards, so
    the next job on the node, whoever runs it, finds no leftover."""
    name = sorted(cluster.nodes)[0]
    script = (
        "set -euo pipefail\n"
        f"srun --container-image={image} --container-name=scoped true\n"
        f"{enroot_node.bin_dir / 'enroot'} list\n"
        'echo "job $SLURM_JOB_ID"\n'
    )
    output = _batch(cluster, "scoped", script, "--nodes=1", f"--nodelist={name}")
    lines = output.read_text().splitlines()
    job = lines[-1].split()[1]
    assert f"pyxis_{job}_scoped" in lines, lines
    # Root's containers on that node's local disk (ENROOT_DATA_PATH .../user-$(id -u)).
    data = Path(node_local_path(cluster.root, name, enroot_node.paths.data)) / "user-0"
    wait_for(
        f"the epilog of job {job} to remove its container",
        lambda: not (data / f"pyxis_{job}_scoped").exists(),
        timeout=30,
    )
    assert not list(data.glob("pyxis_*scoped*"))

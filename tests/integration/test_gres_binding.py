"""GPUs bound to the cores next to them, on real daemons. Every node's slurmd reads the
rendered gres.conf (AutoDetect=nvml) and takes its GPUs' device files and CPUs from what
NVML reports; here Slurm's own stand-in for NVML, fake_gpus.conf (tests/fake_nvml.py),
reports what the instance type's NVML would. The nodes register the catalog's layout, each
GPU gets its socket's CPUs, --gres-flags=enforce-binding takes cores from the socket of the
GPUs, and a node whose NVML finds fewer GPUs than it registers is refused."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gpucluster.catalog import InstanceType
from gpucluster.config import ClusterConfig
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from tests.fake_nvml import fake_gpus_conf
from tests.integration.cluster import SlurmCluster
from tests.integration.queries import one_record
from tests.integration.site_files import FAKE_GPU_DEVICE_PREFIX
from tests.slurm.conf_text import conf_line_of, with_groups

pytestmark = pytest.mark.slurm

GRES_LINE = re.compile(r"Gres Name=gpu Type=(\S+) Count=(\d+) Index=(\d+) .*File=(\S+) Cores=(\S+)")
# A node that registers an instance type's GPUs, of which NVML finds one fewer (index 5 is
# the login node's namespace: conftest.LOGIN_INDEX).
SHORT_NODE = (6, "i-0a1b2c3d4e5f60006")
REFUSAL_TIMEOUT = 60


def rendered_with_nvml(
    cluster: SlurmCluster, cfg: ClusterConfig, directory: Path, instance: InstanceType
) -> Path:
    """The files `cfg` renders for the suite's site under `directory`, beside what NVML
    would report on a node of `instance`: the slurm.conf a probe reads."""
    site = dataclasses.replace(cluster.site, config_dir=str(directory))
    for path, text in slurm_conf.render_slurm_files(resolve(cfg), site).by_path(site).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    (directory / "fake_gpus.conf").write_text(fake_gpus_conf(instance, FAKE_GPU_DEVICE_PREFIX))
    return directory / "slurm.conf"


def slurmd_gres(cluster: SlurmCluster, slurm_conf_path: Path, conf_line: str) -> tuple[list[tuple], str]:
    """`slurmd -G` for a node registering `conf_line`: the GRES it would report (type, count,
    index, file, CPUs), and everything it printed. It reads the files beside `slurm_conf_path`."""
    Path(cluster.site.slurmd_spool_dir.replace("%n", "gres-probe")).mkdir(parents=True, exist_ok=True)
    result = cluster.slurm(
        "slurmd",
        "-G",
        "-Z",
        "--conf",
        conf_line,
        "-N",
        "gres-probe",
        "-f",
        str(slurm_conf_path),
        env={**cluster.env, "SLURM_CONF": str(slurm_conf_path)},
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return [match.groups() for match in GRES_LINE.finditer(output)], output


def test_nodes_register_the_catalog_layout_with_gpus_on_both_sockets(cluster: SlurmCluster):
    layout = cluster.group.instance.gpu_sockets.layout
    for name in cluster.nodes:
        info = one_record(cluster.slurm("scontrol", "-o", "-d", "show", "node", name).stdout)
        assert (info["Sockets"], info["CoresPerSocket"], info["ThreadsPerCore"]) == (
            str(layout.sockets),
            str(layout.cores_per_socket),
            str(layout.threads_per_core),
        )
        assert info["CPUTot"] == str(cluster.group.instance.vcpus)
        assert info["Gres"] == "gpu:h100:8(S:0-1)"


def test_slurmd_takes_each_gpus_file_and_cpus_from_nvml(cluster: SlurmCluster, tmp_path: Path):
    """The registered type (h100) replaces NVML's name (nvidia_h100_80gb_hbm3), and each GPU
    keeps the cores NVML gave it: socket 0's 48 for GPUs 0-3, socket 1's for 4-7."""
    conf = rendered_with_nvml(cluster, cluster.cfg, tmp_path, cluster.group.instance)
    gres, output = slurmd_gres(cluster, conf, conf_line_of(cluster.cfg, cluster.group))
    # slurmd -G writes no topology cache and says so on every run; it then reads the hardware.
    errors = [
        line
        for line in output.lower().splitlines()
        if "error" in line and "xcpuinfo_hwloc_topo_load" not in line
    ]
    assert not errors, output
    assert gres == [
        ("h100", "1", str(gpu), f"/dev/tty{gpu}", "0-47" if gpu < 4 else "48-95") for gpu in range(8)
    ]


def test_enforced_binding_takes_cores_from_the_socket_of_the_gpus(cluster: SlurmCluster):
    """Two allocations of four GPUs on one node: each gets its GPUs' socket's CPUs (Slurm's
    abstract CPU ids: socket 0 holds 0-95, socket 1 96-191). Unbound, the second would take
    the next free CPUs of socket 0 with GPUs 4-7. salloc --no-shell starts nothing on the node."""
    node = sorted(cluster.nodes)[0]
    jobs = []
    for _ in range(2):
        result = cluster.slurm(
            "salloc",
            "--no-shell",
            f"--nodelist={node}",
            "--gpus=4",
            "--gres-flags=enforce-binding",
            "--ntasks=1",
            "--cpus-per-task=2",
            "--mem=1G",
            "--time=5",
        )
        jobs.append(re.search(r"Granted job allocation (\d+)", result.stderr + result.stdout)[1])
    try:
        seen = {}
        for job in jobs:
            detail = cluster.slurm("scontrol", "-d", "show", "job", job).stdout
            cpus = re.search(r"CPU_IDs=(\d+)-(\d+)", detail)
            gpus = re.search(r"GRES=gpu:h100:4\(IDX:(\d+-\d+)\)", detail)
            assert cpus and gpus, detail
            seen[gpus[1]] = (int(cpus[1]), int(cpus[2]))
        assert set(seen) == {"0-3", "4-7"}
        assert all(0 <= cpu <= 95 for cpu in seen["0-3"]), seen
        assert all(96 <= cpu <= 191 for cpu in seen["4-7"]), seen
    finally:
        cluster.slurm("scancel", *jobs, check=False)


def test_two_sizes_of_one_gpu_each_get_their_own_cpus(cluster: SlurmCluster, tmp_path: Path):
    """p5.4xlarge (1 GPU, 8 cores) beside p5.48xlarge: one gres.conf serves both, and each
    slurmd binds its GPUs to its own CPUs. A static gres.conf could not: one Cores= range
    without NodeName is read by both sizes, and the small one rejects the large one's."""
    mixed = with_groups("p5.4xlarge", "p5.48xlarge")
    small, large = mixed.compute_groups
    expected = {
        small.name: [("h100", "1", "0", "/dev/tty0", "0-7")],
        large.name: [("h100", "1", str(g), f"/dev/tty{g}", "0-47" if g < 4 else "48-95") for g in range(8)],
    }
    for group in (small, large):
        conf = rendered_with_nvml(cluster, mixed, tmp_path / group.name, group.instance)
        gres, output = slurmd_gres(cluster, conf, conf_line_of(mixed, group))
        assert gres == expected[group.name], output
        assert "Invalid GRES data" not in output


def test_a_node_whose_nvml_finds_fewer_gpus_than_it_registers_is_refused(cluster: SlurmCluster):
    """NVML finds 7 of p5.48xlarge's 8 GPUs (one fell off the bus): slurmd discards the
    registered GPU it cannot find, reports 7, and slurmctld keeps the node out of service
    with the reason, so no job is given a GPU that is not there."""
    node = cluster.add_node(*SHORT_NODE)
    try:
        node.start(conf_line_of(cluster.cfg, cluster.group), nvml_gpus=7)
        info = cluster.wait_node_state(
            node.name, lambda s: "DRAIN" in s or "INVAL" in s, "to be refused", REFUSAL_TIMEOUT
        )
        assert "gres/gpu count reported lower than configured (7 < 8)" in info.get("Reason", ""), info
        log = Path(cluster.site.slurmd_log_file.replace("%n", node.name)).read_text()
        assert "Discarding the following config-only GPU due to lack of File specification" in log
    finally:
        node.kill()
        cluster.nodes.pop(node.name)
        cluster.slurm("scontrol", "delete", f"NodeName={node.name}", check=False)

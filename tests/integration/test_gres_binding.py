"""GPUs bound to their socket's cores, on real daemons: nodes register the catalog's layout
through --conf, slurmd accepts the rendered gres.conf, and an allocation with
--gres-flags=enforce-binding takes cores from the socket of its GPUs. Where a GPU type is
shared by two sizes, gres.conf binds nothing, and slurmd shows why it must not."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from gpucluster.config import ClusterConfig
from gpucluster.slurm import conf as slurm_conf
from tests.integration.cluster import SlurmCluster
from tests.integration.queries import one_record
from tests.slurm_conf.conf_text import with_groups

pytestmark = pytest.mark.slurm

GRES_LINE = re.compile(r"Gres Name=gpu Type=(\S+) Count=(\d+) .*File=(\S+)(?: Cores=(\S+))?")


def slurmd_gres(cluster: SlurmCluster, slurm_conf_path: Path, conf_line: str) -> tuple[list[tuple], str]:
    """`slurmd -G` for a node registering `conf_line`: the GRES it would report (type, count,
    files, cores), and everything it printed. It reads gres.conf beside `slurm_conf_path`."""
    # Slurm 24.11's slurmd -G checks that its spool directory exists (22.05's does not).
    Path(cluster.site.slurmd_spool_dir.replace("%n", "gres-probe")).mkdir(parents=True, exist_ok=True)
    result = cluster.slurm(
        "slurmd", "-G", "-Z", "--conf", conf_line, "-N", "gres-probe", "-f", str(slurm_conf_path), check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return [match.groups() for match in GRES_LINE.finditer(output)], output


def rendered_elsewhere(cluster: SlurmCluster, cfg: ClusterConfig, directory: Path) -> Path:
    """The files `cfg` renders for the suite's site, written under `directory`."""
    site = dataclasses.replace(cluster.site, config_dir=str(directory))
    for path, text in slurm_conf.render_slurm_files(cfg, site).by_path(site).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return directory / "slurm.conf"


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


def test_slurmd_binds_each_half_of_the_gpus_to_one_socket(cluster: SlurmCluster):
    line = slurm_conf.slurmd_conf_line(cluster.cfg, cluster.group)
    gres, output = slurmd_gres(cluster, Path(cluster.site.config_dir) / "slurm.conf", line)
    # slurmd -G on 24.11 writes no topology cache and says so on every run; it then reads the
    # hardware (22.05 prints no such line).
    errors = [
        line
        for line in output.lower().splitlines()
        if "error" in line and "xcpuinfo_hwloc_topo_load" not in line
    ]
    assert not errors, output
    assert gres == [("h100", "4", "/dev/tty[0-3]", "0-47"), ("h100", "4", "/dev/tty[4-7]", "48-95")]


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


def test_two_sizes_of_one_gpu_get_no_cores_and_slurmd_shows_why(cluster: SlurmCluster, tmp_path: Path):
    """p5.4xlarge (1 GPU, 8 cores) beside p5.48xlarge: the rendered gres.conf binds nothing and
    both sizes read it cleanly; the p5.48xlarge binding alone is what p5.4xlarge's slurmd rejects."""
    mixed = with_groups("p5.4xlarge", "p5.48xlarge")
    mixed_conf = rendered_elsewhere(cluster, mixed, tmp_path / "mixed")
    gres_lines = (tmp_path / "mixed" / "gres.conf").read_text().splitlines()
    assert not [line for line in gres_lines if "Cores=" in line and not line.startswith("#")]
    small, large = mixed.compute_groups
    for group, expected in (
        (small, ("h100", "1", "/dev/tty0", None)),
        (large, ("h100", "8", "/dev/tty[0-7]", None)),
    ):
        gres, output = slurmd_gres(cluster, mixed_conf, slurm_conf.slurmd_conf_line(mixed, group))
        assert gres == [expected], output
        assert "Invalid GRES data" not in output
    # The control: p5.48xlarge's bound lines, read by a p5.4xlarge slurmd.
    _, output = slurmd_gres(
        cluster, Path(cluster.site.config_dir) / "slurm.conf", slurm_conf.slurmd_conf_line(mixed, small)
    )
    assert "Invalid GRES data for gpu, Cores=48-95" in output

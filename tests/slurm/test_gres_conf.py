"""gres.conf: every compute node finds its GPUs, their device files and their cores through
NVML (AutoDetect=nvml), and the type a node registers is the name slurmd gives what NVML
finds. The H200 record is the pinned slurmd on a real H200 host (tests/fixtures/slurm)."""

from __future__ import annotations

import re

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.cpu_topology import CpuLayout, GpuSockets
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.build import CONFIGURE_FLAGS, NodeBuild
from tests.conftest import REPO
from tests.fake_nvml import NVML_NAMES, fake_gpus_conf, slurm_system_type
from tests.slurm.conf_text import settings, with_groups

FIXTURES = REPO / "tests" / "fixtures" / "slurm"
GRES_LINE = re.compile(
    r"Gres Name=gpu Type=(\S+) Count=(\d+) Index=(\d+) .*File=(\S+) Cores=(\S+) .*Flags=(\S+)"
)


def test_every_example_autodetects_and_names_no_node_or_device(example):
    assert settings(slurm_conf.render_slurm_files(resolve(example)).gres_conf) == {"AutoDetect": ["nvml"]}


@pytest.mark.parametrize("instance_type", load_catalog().names())
def test_each_instance_types_gres_is_what_nvml_will_name_it(instance_type):
    """slurmd renames a detected GPU to the registered type that is a substring of its NVML
    name (case-insensitive); a type that is not would leave every GPU of the node unmatched."""
    instance = load_catalog().get(instance_type)
    registered = slurm_conf.gres(resolve(with_groups(instance_type)).groups[0])
    assert registered == f"gpu:{instance.slurm_gpu_type}:{instance.gpu_count}"
    assert instance.slurm_gpu_type in slurm_system_type(NVML_NAMES[instance.gpu_model])


def test_the_nvml_names_cover_the_catalog_and_nothing_else():
    catalog = load_catalog()
    assert set(NVML_NAMES) == {catalog.get(name).gpu_model for name in catalog.names()}


def test_the_h200_host_names_its_gpu_as_the_table_does():
    """`slurmd -C` with gpu/nvml prints the NVML name as Slurm writes it."""
    found = re.search(r"Gres=gpu:(\S+):1", (FIXTURES / "slurmd-C.txt").read_text())
    assert found and found[1] == slurm_system_type(NVML_NAMES["H200"]) == "nvidia_h200"
    assert "NVIDIA H200" in (FIXTURES / "nvidia-smi-query.csv").read_text()


def test_the_pinned_slurmd_on_an_h200_fills_file_and_cores_from_nvml():
    """The rendered gres.conf, read by the pinned slurmd on a real H200: the catalog type of
    p5e/p5en, the device file, and the CPUs nvidia-smi shows as the GPU's affinity."""
    record = (FIXTURES / "slurmd-G-h200.txt").read_text()
    assert "#   AutoDetect=nvml" in record
    assert "# exit 0" in record
    assert "slurm 25.11.7" in record
    catalog = load_catalog()
    h200 = {catalog.get(name).slurm_gpu_type for name in ("p5e.48xlarge", "p5en.48xlarge")}
    flags = "HAS_FILE,HAS_TYPE,ENV_NVML"
    assert GRES_LINE.findall(record) == [(*h200, "1", "0", "/dev/nvidia0", "0-15", flags)]
    affinity = (FIXTURES / "nvidia-smi-topo.txt").read_text().splitlines()[1].split("\t")
    assert affinity[2] == "0-15"


def test_a_registered_gpu_nvml_does_not_find_is_discarded():
    """A p5en node registers 8; on a host where NVML finds one, slurmd reports one and says
    which it dropped, so slurmctld sees fewer GPUs than the node registered."""
    record = (FIXTURES / "slurmd-G-h200-registered-8.txt").read_text()
    assert record.count("Discarding the following config-only GPU due to lack of File specification") == 7
    assert [line[0] for line in GRES_LINE.findall(record)] == ["h200"]


def test_nodes_build_gpu_nvml_and_the_suite_does_not():
    build = NodeBuild()
    assert "--with-nvml=/usr/local/cuda" in build.configure_flags
    assert "/usr/lib/slurm/gpu_nvml.so" in build.required_files
    assert not any("nvml" in flag for flag in CONFIGURE_FLAGS)


def test_the_suites_nvml_stand_in_binds_each_socket_half():
    """The suite's fake_gpus.conf for p5.48xlarge: GPUs 0-3 on socket 0's 48 cores, 4-7 on
    socket 1's (cpu_topology.VERIFIED), named as NVML names an H100."""
    lines = fake_gpus_conf(load_catalog().get("p5.48xlarge"), "/dev/tty").splitlines()
    assert [line.split("|")[2] for line in lines] == ["0-47"] * 4 + ["48-95"] * 4
    assert {line.split("|")[1] for line in lines} == {"192"}
    assert {line.split("|")[0] for line in lines} == {"nvidia_h100_80gb_hbm3"}
    assert lines[0].split("|")[3] == "-1,0,0,0,0,0,0,0"
    # As gpu/nvml flags its GPUs on the H200 (Flags=...,ENV_NVML): jobs get CUDA_VISIBLE_DEVICES.
    assert {line.split("|")[6] for line in lines} == {"nvidia_gpu_env"}


def test_a_gpu_on_a_missing_socket_is_refused():
    layout = CpuLayout(sockets=2, cores_per_socket=4, threads_per_core=1)
    with pytest.raises(ValueError, match="GPU 1 is on socket 2, but the layout has 2"):
        GpuSockets(layout=layout, gpu_socket=(0, 2))

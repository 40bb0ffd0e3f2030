"""gres.conf: device files per GPU type, bound to their socket's cores only where the layout
is verified (cpu_topology.VERIFIED) and every slurmd of the cluster can read the ranges."""

from __future__ import annotations

import re

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.cpu_topology import VERIFIED, CpuLayout, GpuSockets
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from gpucluster.slurm.gres import _bound_lines
from tests.conftest import REPO
from tests.slurm_conf.conf_text import settings, single, with_groups

# Slurm's abstract cores, socket 0 first (gres.conf(5), Cores), for each verified type.
BOUND = {
    "p4d.24xlarge": [
        "Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-23",
        "Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=24-47",
    ],
    "p4de.24xlarge": [
        "Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-23",
        "Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=24-47",
    ],
    "p5.48xlarge": [
        "Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=0-47",
        "Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=48-95",
    ],
    "p5e.48xlarge": [
        "Name=gpu Type=h200 File=/dev/nvidia[0-3] Cores=0-47",
        "Name=gpu Type=h200 File=/dev/nvidia[4-7] Cores=48-95",
    ],
}


def gres_lines(cfg: ClusterConfig) -> tuple[list[str], list[str]]:
    """(Name= lines, comment lines after the header) of the rendered gres.conf."""
    text = slurm_conf.render_slurm_files(cfg).gres_conf.splitlines()
    body = text[text.index("AutoDetect=off") + 1 :]
    return [line for line in body if line.startswith("Name=")], [
        line for line in body if line.startswith("#")
    ]


def test_bound_types_are_exactly_the_verified_ones():
    assert set(BOUND) == set(VERIFIED)
    catalog = load_catalog()
    assert {name for name in catalog.names() if catalog.get(name).gpu_sockets is not None} == set(VERIFIED)


@pytest.mark.parametrize("instance_type", load_catalog().names())
def test_one_type_alone_is_bound_if_and_only_if_verified(instance_type):
    instance = load_catalog().get(instance_type)
    lines, comments = gres_lines(with_groups(instance_type))
    if instance_type in BOUND:
        assert lines == BOUND[instance_type]
        assert comments == []
    else:
        assert lines == [
            f"Name=gpu Type={instance.slurm_gpu_type} File=/dev/nvidia[0-{instance.gpu_count - 1}]"
        ]
        assert comments == [
            f"# gpu:{instance.slurm_gpu_type} is not bound to cores: no public record of {instance_type}'s "
            "GPU-to-socket layout (gpucluster/cpu_topology.py)"
        ]


def test_two_sizes_of_one_gpu_type_are_not_bound_and_the_comment_names_both():
    """p5.4xlarge has 8 cores: a Cores=48-95 line, which its slurmd reads too, is rejected."""
    lines, comments = gres_lines(with_groups("p5.4xlarge", "p5.48xlarge"))
    assert lines == ["Name=gpu Type=h100 File=/dev/nvidia[0-7]"]
    assert comments == [
        "# gpu:h100 is not bound to cores: p5.4xlarge (8 cores) and p5.48xlarge (96 cores) share it, "
        "and one line without NodeName cannot name cores that both have"
    ]


def test_a_range_past_another_types_cores_is_not_rendered():
    """Every slurmd converts every line's Cores=, other GPU types' lines included (`slurmd -G`
    on 22.05.8 logs "Invalid GRES data for gpu, Cores=48-95" on a 48-core p4d layout)."""
    lines, comments = gres_lines(with_groups("p4d.24xlarge", "p5.48xlarge"))
    assert lines == [*BOUND["p4d.24xlarge"], "Name=gpu Type=h100 File=/dev/nvidia[0-7]"]
    assert comments == [
        "# gpu:h100 is not bound to cores: its Cores= reach core 95, past the cores of "
        "p4d.24xlarge (48 cores), whose slurmd reads this file too"
    ]


def test_same_core_count_but_one_layout_unverified():
    lines, comments = gres_lines(with_groups("p5e.48xlarge", "p5en.48xlarge"))
    assert lines == ["Name=gpu Type=h200 File=/dev/nvidia[0-7]"]
    assert comments == [
        "# gpu:h200 is not bound to cores: no public record of p5en.48xlarge's GPU-to-socket layout "
        "(gpucluster/cpu_topology.py)"
    ]


def test_mixed_example_binds_nothing_and_says_why():
    lines, comments = gres_lines(load_config(REPO / "examples" / "mixed.yaml"))
    assert lines == ["Name=gpu Type=h100 File=/dev/nvidia[0-7]", "Name=gpu Type=l40s File=/dev/nvidia[0-7]"]
    assert [c.split()[1] for c in comments] == ["gpu:h100", "gpu:l40s"]
    assert "g6e.12xlarge (24 cores)" in comments[0]


def test_runs_of_gpus_follow_their_sockets():
    """A layout whose GPUs alternate sockets gets one line per run, in GPU order."""
    layout = CpuLayout(sockets=2, cores_per_socket=4, threads_per_core=1)
    lines = _bound_lines("x", GpuSockets(layout=layout, gpu_socket=(1, 1, 0, 0, 1)), "/dev/nvidia")
    assert [(line.files, line.cores) for line in lines] == [
        ("/dev/nvidia[0-1]", "4-7"),
        ("/dev/nvidia[2-3]", "0-3"),
        ("/dev/nvidia[4-4]", "4-7"),
    ]


def test_a_gpu_on_a_missing_socket_is_refused():
    layout = CpuLayout(sockets=2, cores_per_socket=4, threads_per_core=1)
    with pytest.raises(ValueError, match="GPU 1 is on socket 2, but the layout has 2"):
        GpuSockets(layout=layout, gpu_socket=(0, 2))


def test_every_example_covers_every_group_without_node_names(example):
    gres = settings(slurm_conf.render_slurm_files(example).gres_conf)
    assert single(gres, "AutoDetect") == "off"
    assert "NodeName" not in gres
    files: dict[str, set[int]] = {}
    for line in gres["Name"]:
        fields = dict(item.split("=", 1) for item in line.split()[1:])
        first, last = map(int, re.fullmatch(r"/dev/nvidia\[(\d+)-(\d+)\]", fields["File"]).groups())
        files.setdefault(fields["Type"], set()).update(range(first, last + 1))
    for group in example.compute_groups:
        assert set(range(group.instance.gpu_count)) <= files[group.instance.slurm_gpu_type]


def test_fake_devices_for_tests():
    cfg = load_config(REPO / "examples" / "default.yaml")
    gres = slurm_conf.render_slurm_files(cfg, SlurmSite(gpu_device_prefix="/dev/tty")).gres_conf
    assert "Name=gpu Type=h100 File=/dev/tty[0-3] Cores=0-47" in gres.splitlines()

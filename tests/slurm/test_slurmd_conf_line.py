"""What a compute node tells slurmd about itself (the --conf line) and its node name."""

from __future__ import annotations

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.config.loader import load_config
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from tests.conftest import REPO
from tests.slurm.conf_text import conf_line_of, with_group, with_groups


class TestSlurmdConfLine:
    @pytest.mark.parametrize(
        ("instance_type", "expected"),
        [
            (
                "p5.48xlarge",
                "Gres=gpu:h100:8 Feature=gpu,p5.48xlarge RealMemory=1992294 "
                "Sockets=2 CoresPerSocket=48 ThreadsPerCore=2",
            ),
            (
                "p4d.24xlarge",
                "Gres=gpu:a100:8 Feature=gpu,p4d.24xlarge RealMemory=1120665 "
                "Sockets=2 CoresPerSocket=24 ThreadsPerCore=2",
            ),
            ("p5en.48xlarge", "Gres=gpu:h200:8 Feature=gpu,p5en.48xlarge RealMemory=1992294"),
            ("p6-b200.48xlarge", "Gres=gpu:b200:8 Feature=gpu,p6-b200.48xlarge RealMemory=1992294"),
        ],
    )
    def test_catalog_values(self, instance_type, expected):
        cfg = with_group(instance_type)
        assert conf_line_of(cfg, cfg.compute_groups[0]) == expected

    def test_memory_reserve_is_five_percent_rounded_in_favour_of_the_os(self):
        cfg = with_group("p5.48xlarge")
        # 2 TiB nominal; 5 % of 2097152 MiB is 104857.6 MiB, reserved as 104858.
        assert slurm_conf.real_memory_mib(resolve(cfg).groups[0]) == 2097152 - 104858

    def test_every_example_group_advertises_its_gpus(self, example):
        for group in example.compute_groups:
            line = conf_line_of(example, group)
            fields = dict(item.split("=", 1) for item in line.split())
            layout = {"Sockets", "CoresPerSocket", "ThreadsPerCore"}
            assert set(fields) == {"Gres", "Feature", "RealMemory"} | (
                layout if group.instance.gpu_sockets is not None else set()
            )
            assert fields["Gres"] == f"gpu:{group.instance.slurm_gpu_type}:{group.instance.gpu_count}"
            assert fields["Feature"].split(",") == [group.name, group.instance_type]

    @pytest.mark.parametrize("instance_type", load_catalog().names())
    def test_layout_is_registered_exactly_where_gres_conf_can_bind(self, instance_type):
        """Cores= count cores in the catalog's layout; a node registers that layout, so that
        slurmctld holds the node to it. Types without a verified layout let slurmd detect."""
        cfg = with_groups(instance_type)
        fields = dict(item.split("=", 1) for item in conf_line_of(cfg, cfg.compute_groups[0]).split())
        topology = cfg.compute_groups[0].instance.gpu_sockets
        if topology is None:
            assert not {"Sockets", "CoresPerSocket", "ThreadsPerCore", "CPUs"} & set(fields)
        else:
            layout = topology.layout
            assert (fields["Sockets"], fields["CoresPerSocket"], fields["ThreadsPerCore"]) == (
                str(layout.sockets),
                str(layout.cores_per_socket),
                str(layout.threads_per_core),
            )
            assert "CPUs" not in fields

    def test_group_of_another_cluster_is_refused(self):
        cfg = load_config(REPO / "examples" / "default.yaml")
        other = resolve(load_config(REPO / "examples" / "mixed.yaml")).groups[1]
        with pytest.raises(ValueError, match="not part of cluster demo"):
            slurm_conf.slurmd_conf_line(resolve(cfg), other)


class TestNodeName:
    def test_group_and_instance_id(self):
        assert slurm_conf.node_name("gpu", "i-0123456789abcdef0") == "gpu-i-0123456789abcdef0"

    @pytest.mark.parametrize("bad", ["0123456789abcdef0", "i-XYZ", "i-0123456789abcdef0 ", ""])
    def test_rejects_what_is_not_an_instance_id(self, bad):
        with pytest.raises(ValueError, match="not an EC2 instance id"):
            slurm_conf.node_name("gpu", bad)

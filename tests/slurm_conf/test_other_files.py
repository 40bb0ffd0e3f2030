"""The files served beside slurm.conf: gres.conf binds device files only, cgroup.conf
constrains, and plugstack.conf includes pyxis by name (configless expands no wildcard)."""

from __future__ import annotations

import re

import pytest

from gpucluster.catalog import load_catalog
from gpucluster.config import ComputeGroupConfig, OnDemandCapacity
from gpucluster.config.loader import load_config
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from tests.conftest import REPO
from tests.slurm_conf.conf_text import line_fields, settings, single


class TestOtherFiles:
    def test_gres_conf_covers_every_group_without_node_names(self, example):
        gres = settings(slurm_conf.render_slurm_files(example).gres_conf)
        assert single(gres, "AutoDetect") == "off"
        assert "NodeName" not in gres
        lines = [line_fields(value) for value in gres["Name"]]
        by_type = {line["Type"]: line["File"] for line in lines}
        assert len(by_type) == len(lines), "one line per GPU type"
        for group in example.compute_groups:
            match = re.fullmatch(r"/dev/nvidia\[0-(\d+)\]", by_type[group.instance.slurm_gpu_type])
            assert match, by_type
            assert int(match[1]) + 1 >= group.instance.gpu_count

    def test_gres_line_takes_the_largest_count_of_a_type(self):
        cfg = load_config(REPO / "examples" / "mixed.yaml")
        gres = slurm_conf.render_slurm_files(cfg).gres_conf
        assert "Name=gpu Type=l40s File=/dev/nvidia[0-7]" in gres.splitlines()
        assert "Name=gpu Type=h100 File=/dev/nvidia[0-7]" in gres.splitlines()

    @pytest.mark.parametrize("instance_type", load_catalog().names())
    def test_gres_conf_per_instance_type_binds_no_cores(self, instance_type):
        """AutoDetect=nvml needs gpu_nvml.so, which noble's slurm-wlm-basic-plugins lacks and
        noble publishes no slurm-wlm-nvml-plugin for; Cores= from one shared line would name
        cores a smaller size of the same GPU does not have, and the catalog has no verified
        GPU-to-core mapping. So: the device files, nothing more."""
        cfg = load_config(REPO / "examples" / "default.yaml")
        group = ComputeGroupConfig(
            name="g", instance_type=instance_type, count=1, capacity=OnDemandCapacity(type="on-demand")
        )
        cfg = cfg.model_copy(update={"compute_groups": [group]})
        instance = group.instance
        gres = slurm_conf.render_slurm_files(cfg).gres_conf
        lines = [line for line in gres.splitlines() if not line.startswith("#")]
        assert lines == [
            "AutoDetect=off",
            f"Name=gpu Type={instance.slurm_gpu_type} File=/dev/nvidia[0-{instance.gpu_count - 1}]",
        ]

    def test_one_gres_line_serves_sizes_with_different_core_counts(self):
        """The reason gres.conf has no Cores=: its one line per GPU type is read by every size
        of that GPU, and slurmd rejects a core range past its own cores. If every size of each
        GPU type had the same CPU count, a shared Cores= line could fit them all: revisit
        templates/slurm/gres.conf.j2 when this fails."""
        catalog = load_catalog()
        cpus_by_type: dict[str, set[int]] = {}
        for name in catalog.names():
            instance = catalog.get(name)
            cpus_by_type.setdefault(instance.slurm_gpu_type, set()).add(instance.vcpus)
        assert cpus_by_type["h100"] == {16, 192}, "p5.4xlarge and p5.48xlarge share Type=h100"
        assert all(len(cpus) > 1 for gpu, cpus in cpus_by_type.items() if gpu in {"a10g", "l4", "l40s"})

    def test_fake_devices_for_tests(self):
        cfg = load_config(REPO / "examples" / "default.yaml")
        gres = slurm_conf.render_slurm_files(cfg, SlurmSite(gpu_device_prefix="/dev/tty")).gres_conf
        assert "Name=gpu Type=h100 File=/dev/tty[0-7]" in gres.splitlines()

    def test_cgroup_conf_constrains_devices_cores_and_memory(self, example):
        cgroup = settings(slurm_conf.render_slurm_files(example).cgroup_conf)
        assert single(cgroup, "ConstrainDevices") == "yes"
        assert single(cgroup, "ConstrainCores") == "yes"
        assert single(cgroup, "ConstrainRAMSpace") == "yes"

    def test_plugstack_includes_pyxis_explicitly(self, example):
        files = slurm_conf.render_slurm_files(example)
        site = SlurmSite()
        paths = files.by_path(site)
        plugstack = [line for line in files.plugstack_conf.splitlines() if not line.startswith("#")]
        assert plugstack == ["include /etc/slurm/plugstack.conf.d/pyxis.conf"]
        assert "*" not in files.plugstack_conf, "configless cannot expand wildcards"
        assert paths["/etc/slurm/plugstack.conf.d/pyxis.conf"] == (
            "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis\n"
        )

    def test_nodes_get_the_included_pyxis_file_themselves(self, example):
        site = SlurmSite()
        served = slurm_conf.render_slurm_files(example, site).by_path(site)
        local = slurm_conf.node_local_files(example, site)
        plugstack = f"{site.config_dir}/plugstack.conf"
        include = served[plugstack].splitlines()[-1].split()[1]
        assert local == {plugstack: served[plugstack], include: served[include]}

    def test_pyxis_is_required(self):
        """Every host that loads the plugstack needs Pyxis: a job that asks for a container
        must not run without one (the real-Slurm suite builds it too)."""
        cfg = load_config(REPO / "examples" / "default.yaml")
        site = SlurmSite()
        files = slurm_conf.render_slurm_files(cfg, site)
        assert files.pyxis_conf == f"required {site.pyxis_library} runtime_path={site.pyxis_runtime_path}\n"

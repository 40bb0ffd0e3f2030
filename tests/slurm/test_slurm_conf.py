"""slurm.conf as gpucluster renders it: configless dynamic nodes, one nodeset and
partition per group, time limits, and the site values the tests and the suite change."""

from __future__ import annotations

import pytest
import yaml

from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.config.slurm_time import parse_minutes
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from tests.conftest import REPO
from tests.slurm.conf_text import healthcheck_of, line_fields, settings, single


class TestSlurmConf:
    def test_configless_dynamic_node_settings(self, example):
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        assert single(conf, "SlurmctldParameters") == "enable_configless"
        assert single(conf, "SelectType") == "select/cons_tres"
        assert "TreeWidth" not in conf, "the pinned release fans out to dynamic nodes"
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
        assert "MessageTimeout" not in conf, "production keeps Slurm's default MessageTimeout"
        # Only what the Prolog needs: the scheduler's intervals stay Slurm's defaults.
        assert single(conf, "SchedulerParameters") == "nohold_on_prolog_fail"

    def test_jobs_keep_slurmds_locked_memory_and_an_extern_step(self, example):
        """EFA needs memlock: a job must not take the low limit of the shell that submitted it
        (the real-Slurm suite submits from one: tests/integration/test_node_limits.py). The
        extern step holds ssh sessions pam_slurm_adopt adopts."""
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        assert single(conf, "PropagateResourceLimitsExcept") == "MEMLOCK"
        assert "PropagateResourceLimits" not in conf
        assert single(conf, "PrologFlags") == "Contain"

    def test_mail_requests_are_logged_by_a_program_every_image_has(self, example):
        """slurmctld logs "Configured MailProg is invalid" at every start when MailProg is
        missing (the real-Slurm suite checks its log); logger is in bsdutils, which Debian
        and Ubuntu mark essential."""
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        assert single(conf, "MailProg") == "/usr/bin/logger"

    def test_max_node_count_of_the_default_example(self):
        # 2 nodes, room to replace both, and the Capacity Block group's placeholder node.
        cfg = load_config(REPO / "examples" / "default.yaml")
        assert slurm_conf.max_node_count(resolve(cfg)) == 5

    def test_never_sets_cloud_dns(self, example):
        # Slurm 22.05 dynamic nodes break with cloud_dns.
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        assert not [key for key, values in conf.items() for v in values if "cloud_dns" in v]

    def test_controller_host_is_the_head_name_reached_by_dns(self, example):
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        expected = f"{example.name}-head(slurmctld.{example.name}.gpucluster.internal)"
        assert single(conf, "SlurmctldHost") == expected

    def test_one_partition_per_group_by_feature_plus_a_spanning_default(self, example):
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
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
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
        partitions = {f["_name"]: f for f in map(line_fields, conf["PartitionName"])}
        for group in resolve(example).groups:
            instance = group.instance
            part = partitions[group.name]
            assert int(part["DefCpuPerGPU"]) == instance.vcpus // instance.gpu_count
            assert int(part["DefMemPerGPU"]) * instance.gpu_count <= slurm_conf.real_memory_mib(group)

    def test_every_partition_has_a_default_time_and_a_bounded_max_time(self, example):
        # INFINITE limits never start once a Capacity Block's end reservation exists.
        conf = settings(slurm_conf.render_slurm_files(resolve(example)).slurm_conf)
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
        conf = settings(slurm_conf.render_slurm_files(resolve(ClusterConfig.model_validate(raw))).slurm_conf)
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
        conf = settings(slurm_conf.render_slurm_files(resolve(cfg), site).slurm_conf)
        assert single(conf, "SlurmctldHost") == "testhost(10.213.0.1)"
        assert single(conf, "SlurmctldPort") == "16817"
        assert single(conf, "SlurmdPort") == "16818"
        assert single(conf, "SlurmUser") == "root"
        assert single(conf, "StateSaveLocation") == "/tmp/state"
        assert single(conf, "AuthInfo") == "socket=/run/munge/munge.socket.2,cred_expire=10"
        assert single(conf, "SlurmdTimeout") == "5"
        assert single(conf, "SlurmdParameters") == "config_overrides"
        assert single(conf, "MessageTimeout") == "3"
        assert single(conf, "SchedulerParameters") == "nohold_on_prolog_fail,sched_interval=2,bf_interval=1"
        healthcheck = healthcheck_of(cfg, cfg.compute_groups[0], site)
        assert 'export SLURM_CONF="/tmp/etc/slurm.conf"' in healthcheck.splitlines()
        assert slurm_conf.conf_server(resolve(cfg), site) == "10.213.0.1:16817"

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

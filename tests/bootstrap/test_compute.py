"""A compute node's bootstrap against stub system commands (tests/shell_harness.py): the
order of its steps, idempotence, the slurmd --conf line, LNet on EFA, Fabric Manager,
and the munge key."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gpucluster.bootstrap.render_files import render_to_dir
from gpucluster.efa import efa_count
from gpucluster.names import LAUNCH_LIFECYCLE_HOOK
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.conf import node_local_files, node_name, render_slurm_files
from tests.bootstrap_runs import CHANGING_CALLS, abandoned, continued, example, slurmd_dropin, with_group
from tests.shell_harness import INSTANCE_ID, MUNGE_SECRET, Node
from tests.slurm.conf_text import conf_line_of


def test_compute_joins_after_pinning_the_kernel_first(tmp_path: Path) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    pin = run.index("apt-mark hold linux-aws")
    assert pin < run.index("apt-get -o DPkg::Lock::Timeout=1200 install")
    assert pin < run.index("apt-get -o DPkg::Lock::Timeout=1200 update")
    assert "lustre-client-modules-" in (node.root / "etc/apt/apt.conf.d/51gpucluster-kernel-pin").read_text()
    install = next(call for call in run.calls if " install " in call and "munge" in call)
    assert " libpmix-dev" in install  # the containerised nccl-tests' srun --mpi=pmix
    assert "slurm" not in install, "nodes install the head's Slurm package, not the distribution's"
    # Installed from the head's package: no Slurm compile on a compute node.
    assert (node.root / "usr/sbin/slurmd").is_file()
    assert not run.called("aws --region us-east-2 s3 cp")
    assert run.index(f"mount {node.root}/home") < run.index("systemctl start slurmd")
    assert run.index("fi_info") < run.index("systemctl start slurmd")
    assert run.index("systemctl start slurmd") < run.index(
        "aws --region us-east-2 autoscaling complete-lifecycle-action"
    )
    assert continued(run) and not abandoned(run)
    lifecycle = run.called("aws --region us-east-2 autoscaling complete-lifecycle-action")[0]
    assert f"--lifecycle-hook-name {LAUNCH_LIFECYCLE_HOOK}" in lifecycle
    assert f"--instance-id {INSTANCE_ID}" in lifecycle
    expected_name = node_name("gpu", INSTANCE_ID)
    assert f"hostnamectl set-hostname {expected_name}" in run.calls
    assert "--conf-server slurmctld.demo.gpucluster.internal:6817" in slurmd_dropin(node)
    assert "ConditionPathExists=\n" in slurmd_dropin(node)
    # Upstream's unit is Type=notify for `slurmd --systemd`; a -D command line needs simple.
    assert "Type=simple\nLimitMEMLOCK=infinity\nExecStart=\nExecStart=/usr/sbin/slurmd -D " in slurmd_dropin(
        node
    )
    reachable = run.index("nc -z -w 5 slurmctld.demo.gpucluster.internal 6817")
    assert reachable < run.index("systemctl start slurmd")
    assert run.index("systemctl start slurmd") < run.index(f"scontrol show node gpu-{INSTANCE_ID}")
    healthcheck = node.root / "usr/local/sbin/gpucluster-healthcheck"
    assert healthcheck.stat().st_mode & stat.S_IXUSR
    enroot_conf = (node.root / "etc/enroot/enroot.conf").read_text()
    assert "ENROOT_DATA_PATH /opt/dlami/nvme/enroot/data/user-$(id -u)" in enroot_conf
    # Enroot makes the per-user runtime, data and cache directories but only runs mktemp in
    # its temporary one (tests/integration/test_containers.py runs `enroot import` with it).
    assert "ENROOT_TEMP_PATH /opt/dlami/nvme/enroot/tmp\n" in enroot_conf
    assert (node.root / "usr/local/lib/slurm/spank_pyxis.so").exists()
    assert (node.state / "sysctl-kernel.apparmor_restrict_unprivileged_userns").read_text() == "0\n"


@pytest.mark.parametrize(
    ("role", "group", "example_name"), [("compute", "gpu", "default"), ("login", None, "mixed")]
)
def test_nodes_hold_the_pyxis_include_the_served_plugstack_names(
    tmp_path: Path, role: str, group: str | None, example_name: str
) -> None:
    cfg = example(example_name)
    node = Node(tmp_path, cfg, nvme_mounted=role == "compute")
    run = node.run(role, group)
    assert run.returncode == 0, run.output
    served = render_slurm_files(resolve(cfg), node.site).by_path(node.site)
    local = node_local_files(resolve(cfg), node.site)
    assert local
    for path, text in local.items():
        assert f"include {path}" in served[f"{node.site.config_dir}/plugstack.conf"]
        assert (node.root / path.lstrip("/")).read_text() == text == served[path]


def test_second_compute_run_changes_nothing(tmp_path: Path) -> None:
    node = Node(tmp_path, example("p5en-capacity-block"), efa=16)
    first = node.run("compute", "h200")
    assert first.returncode == 0, first.output
    before = node.tree()
    second = node.run("compute", "h200")
    assert second.returncode == 0, second.output
    changing = [call for call in second.calls if call.startswith(CHANGING_CALLS)]
    changing += [call for call in second.calls if call.startswith("curl") and " -o " in call]
    assert changing == []
    assert node.tree() == before
    assert not continued(second) and not abandoned(second)


def test_efa_file_system_gets_lnet_on_efa_before_the_mount(tmp_path: Path) -> None:
    node = Node(tmp_path, example("p5en-capacity-block"), efa=16)
    run = node.run("compute", "h200")
    assert run.returncode == 0, run.output
    added = run.called("lnetctl net add --net efa")
    # FSx guide: 8 EFA interfaces on p5en, spread over its 16 devices.
    assert len(added) == 8
    assert [call.split("--if ")[1].split()[0] for call in added] == [
        f"rdmap{index:02d}s0" for index in range(0, 16, 2)
    ]
    assert run.index("lnetctl udsp add") < run.index(f"mount {node.root}/fsx")
    unit = (node.root / "etc/systemd/system/gpucluster-lustre-efa.service").read_text()
    assert f"ExecStart={NODE_LAYOUT.bundle_dir}/bin/lustre-efa.sh --group h200" in unit
    assert "systemctl enable gpucluster-lustre-efa.service" in run.calls


def test_lnet_efa_is_redone_at_boot(tmp_path: Path) -> None:
    node = Node(tmp_path, example("p5en-capacity-block"), efa=16)
    assert node.run("compute", "h200").returncode == 0
    (node.state / "lnet").unlink()  # a reboot empties the kernel's LNet configuration
    boot = node.run_script("bin/lustre-efa.sh", "--group", "h200")
    assert boot.returncode == 0, boot.output
    assert len(boot.called("lnetctl net add --net efa")) == 8
    assert boot.called("apt-get") == [] and boot.called("mount ") == []


def test_tcp_only_file_systems_get_no_lnet_unit(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert run.called("lnetctl") == [] and run.called("modprobe") == []
    assert not (node.root / "etc/systemd/system/gpucluster-lustre-efa.service").exists()


@pytest.mark.parametrize(
    ("instance_type", "gres", "efa"),
    [
        ("p5.48xlarge", "gpu:h100:8", 32),
        ("p5en.48xlarge", "gpu:h200:8", 16),
        ("p6-b200.48xlarge", "gpu:b200:8", 8),
    ],
)
def test_slurmd_conf_line_matches_the_catalog(
    tmp_path: Path, instance_type: str, gres: str, efa: int
) -> None:
    cfg = with_group(example("default"), "train", instance_type)
    group = cfg.compute_groups[0]
    node = Node(tmp_path, cfg, gpus=group.instance.gpu_count, efa=efa)
    run = node.run("compute", "train")
    assert run.returncode == 0, run.output
    line = conf_line_of(cfg, group)
    assert f"Gres={gres} " in line
    assert f"Feature=train,{instance_type}" in line
    # The node's Topology= follows (test_a_node_registers_under_its_switch).
    assert f'-Z --conf-server slurmctld.demo.gpucluster.internal:6817 --conf "{line}' in slurmd_dropin(node)


@pytest.mark.parametrize(
    ("instance_type", "env", "topology", "says"),
    [
        (
            "p5.48xlarge",
            {"SIM_TOPOLOGY": "nn-1a\tnn-2b\tnn-3c"},
            " Topology=default:ec2:nn-1a:nn-2b:nn-3c",
            "registering under its EC2 network switches (default:ec2:nn-1a:nn-2b:nn-3c)",
        ),
        ("g6.48xlarge", {}, " Topology=default:ec2:flat", "EC2 does not describe this type's topology"),
        ("p5.48xlarge", {}, "", "EC2 does not describe this instance's topology yet ('None')"),
        ("p5.48xlarge", {"SIM_TOPOLOGY_FAIL": "1"}, "", "DescribeInstanceTopology failed"),
    ],
)
def test_a_node_registers_under_its_switch(
    tmp_path: Path, instance_type: str, env: dict[str, str], topology: str, says: str
) -> None:
    cfg = with_group(example("default"), "train", instance_type)
    group = cfg.compute_groups[0]
    node = Node(tmp_path, cfg, gpus=group.instance.gpu_count, efa=efa_count(group.instance))
    node.env.update(env)
    run = node.run("compute", "train")
    assert run.returncode == 0, run.output
    assert f'--conf "{conf_line_of(cfg, group)}{topology}"' in slurmd_dropin(node)
    assert says in run.output
    asked = run.called("aws --region us-east-2 ec2 describe-instance-topology")
    assert len(asked) == (0 if "flat" in topology else 1)
    assert run.output.index("step place_in_topology") < run.output.index("step start_slurmd")


FABRIC_MANAGER_CHECK = "systemctl is-active --quiet nvidia-fabricmanager"


@pytest.mark.parametrize(
    ("instance_type", "efa", "nvswitch"),
    [("p5.48xlarge", 32, True), ("p4d.24xlarge", 4, True), ("g6e.12xlarge", 1, False)],
)
def test_fabric_manager_runs_before_the_health_check_on_nvswitch_types_only(
    tmp_path: Path, instance_type: str, efa: int, nvswitch: bool
) -> None:
    cfg = with_group(example("default"), "train", instance_type)
    node = Node(tmp_path, cfg, gpus=cfg.compute_groups[0].instance.gpu_count, efa=efa)
    run = node.run("compute", "train")
    assert run.returncode == 0, run.output
    fabric_calls = [call for call in run.calls if "nvidia-fabricmanager" in call]
    if not nvswitch:
        assert fabric_calls == []
        assert "fabric manager not needed" in run.output
        return
    assert "systemctl enable nvidia-fabricmanager" in run.calls
    start = run.index("systemctl start nvidia-fabricmanager")
    # The pre-join health check's own look at the unit comes after the start.
    assert any(i > start for i, call in enumerate(run.calls) if call == FABRIC_MANAGER_CHECK)
    assert start < run.index("systemctl start slurmd")
    again = node.run("compute", "train")
    assert again.returncode == 0, again.output
    assert "systemctl start nvidia-fabricmanager" not in again.calls


def test_munge_key_lands_root_only_and_nowhere_else(tmp_path: Path) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    key = node.root / "etc/munge/munge.key"
    assert key.read_text() == MUNGE_SECRET
    assert stat.S_IMODE(key.stat().st_mode) == 0o400
    assert "chown munge:munge " + str(key) in run.calls
    assert MUNGE_SECRET not in run.output
    assert MUNGE_SECRET not in "\n".join(node.calls())
    for path in render_to_dir(cfg, tmp_path / "rendered"):
        assert MUNGE_SECRET not in path.read_text()
    leaked = [
        name
        for name, data in node.tree().items()
        if MUNGE_SECRET.encode() in data and name != "etc/munge/munge.key"
    ]
    assert leaked == []


def test_a_new_munge_key_replaces_the_old_one_and_restarts_munge_once(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    assert node.run("compute", "gpu").returncode == 0
    key = node.root / "etc/munge/munge.key"
    same = node.run("compute", "gpu")
    assert not same.called("systemctl restart munge"), "the same key restarts nothing"
    node.secret_file.write_text("N" * 64)
    rotated = node.run("compute", "gpu")
    assert rotated.returncode == 0, rotated.output
    assert key.read_text() == "N" * 64
    assert stat.S_IMODE(key.stat().st_mode) == 0o400
    assert rotated.called("systemctl restart munge")
    assert not list(key.parent.glob(".munge.key.*")), "no temporary file is left"


def test_compute_runs_the_metrics_collector_from_its_bundle_every_minute(tmp_path: Path) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    service = (node.root / "etc/systemd/system/gpucluster-node-metrics.service").read_text()
    assert f"WorkingDirectory={NODE_LAYOUT.agents_dir}\n" in service
    assert f"ExecStart=/usr/bin/python3 -m gpucluster.agents.node_metrics --cluster {cfg.name}\n" in service
    assert "LogsDirectory=gpucluster-metrics" in service
    assert (node.root / "etc/systemd/system/gpucluster-node-metrics.timer").is_file()
    assert "systemctl enable gpucluster-node-metrics.timer" in run.calls
    assert run.index("systemctl start gpucluster-node-metrics.timer") < run.index("systemctl start slurmd")

"""The rendered bootstrap executed against stub system commands (tests/shell_harness.py):
order, idempotence, the conf line, and every failure that must keep a node out of Slurm."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap import (
    BUNDLE_INSTALL_DIR,
    FAILURE_TAG,
    bundle_files,
    head_agents,
)
from gpucluster.config import ComputeGroupConfig, OnDemandCapacity
from gpucluster.loader import load_config
from gpucluster.names import LAUNCH_LIFECYCLE_HOOK
from gpucluster.render_cmd import render_to_dir
from gpucluster.slurm_conf import (
    controller_hostname,
    node_local_files,
    node_name,
    render_slurm_files,
    slurmd_conf_line,
)
from tests.shell_downloads import with_fixture_checksums
from tests.shell_harness import INSTANCE_ID, MUNGE_SECRET, Node, Run

REPO = Path(__file__).resolve().parent.parent

# Calls that change a node: none of them may happen on a second run.
CHANGING_CALLS = (
    "apt-get",
    "apt-mark hold",
    "mount ",
    "systemctl enable",
    "systemctl start",
    "systemctl restart",
    "systemctl daemon-reload",
    "hostnamectl",
    "make",
    "sysctl -p",
    "lnetctl net add",
    "modprobe",
    "aws --region us-east-1 autoscaling complete-lifecycle-action",
)


def example(name: str):
    return with_fixture_checksums(load_config(REPO / "examples" / f"{name}.yaml"))


def with_group(cfg, name: str, instance_type: str):
    group = ComputeGroupConfig(
        name=name, instance_type=instance_type, count=2, capacity=OnDemandCapacity(type="on-demand")
    )
    return cfg.model_copy(update={"compute_groups": [group]})


def abandoned(run: Run) -> bool:
    return any("--lifecycle-action-result ABANDON" in call for call in run.calls)


def continued(run: Run) -> bool:
    return any("--lifecycle-action-result CONTINUE" in call for call in run.calls)


def slurmd_started(run: Run) -> bool:
    return any(call in ("systemctl start slurmd", "systemctl restart slurmd") for call in run.calls)


def slurmd_dropin(node: Node) -> str:
    return (node.root / "etc/systemd/system/slurmd.service.d/gpucluster.conf").read_text()


def test_compute_joins_after_pinning_the_kernel_first(tmp_path: Path) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg)
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    pin = run.index("apt-mark hold linux-aws")
    assert pin < run.index("apt-get -o DPkg::Lock::Timeout=1200 install")
    assert pin < run.index("apt-get -o DPkg::Lock::Timeout=1200 update")
    assert "lustre-client-modules-" in (node.root / "etc/apt/apt.conf.d/51gpucluster-kernel-pin").read_text()
    install = next(call for call in run.calls if " install " in call and "slurmd=" in call)
    assert "slurmd=23.11.4-1.2ubuntu5" in install and "slurm-client=23.11.4-1.2ubuntu5" in install
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
    # The 23.11 unit is Type=notify for `slurmd --systemd`; a -D command line needs simple.
    assert "Type=simple\nExecStart=\nExecStart=/usr/sbin/slurmd -D " in slurmd_dropin(node)
    reachable = run.index("nc -z -w 5 slurmctld.demo.gpucluster.internal 6817")
    assert reachable < run.index("systemctl start slurmd")
    assert run.index("systemctl start slurmd") < run.index(f"scontrol show node gpu-{INSTANCE_ID}")
    healthcheck = node.root / "usr/local/sbin/gpucluster-healthcheck"
    assert healthcheck.stat().st_mode & stat.S_IXUSR
    enroot_conf = (node.root / "etc/enroot/enroot.conf").read_text()
    assert "ENROOT_DATA_PATH /opt/dlami/nvme/enroot/data/user-$(id -u)" in enroot_conf
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
    served = render_slurm_files(cfg, node.site).by_path(node.site)
    local = node_local_files(cfg, node.site)
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
    assert f"ExecStart={BUNDLE_INSTALL_DIR}/bin/lustre-efa.sh --group h200" in unit
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
    line = slurmd_conf_line(cfg, group)
    assert f"Gres={gres} " in line
    assert f"Feature=train,{instance_type}" in line
    assert f'-Z --conf-server slurmctld.demo.gpucluster.internal:6817 --conf "{line}"' in slurmd_dropin(node)


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


def failing_node(tmp_path: Path, failure: str) -> tuple[Node, str]:
    """A compute node with one defect, and the text its failure reason must contain."""
    cfg = example("default")
    if failure == "kernel":
        cfg = cfg.model_copy(update={"image": cfg.image.model_copy(update={"kernel": "6.8.0-1021-aws"})})
        return Node(tmp_path, cfg, kernel="6.8.0-1030-aws"), "not the pinned kernel"
    if failure == "checksum":
        return Node(tmp_path, cfg, corrupt_downloads=("enroot_4.2.1-1_amd64.deb",)), "sha256"
    if failure == "gpu":
        return Node(tmp_path, cfg, gpus=7), "pre-join health check failed"
    if failure == "efa":
        return Node(tmp_path, cfg, efa=31), "pre-join health check failed"
    if failure == "slurm":
        return Node(tmp_path, cfg, slurm_available=("24.05.1-1",)), "no Slurm 23.11.4"
    if failure == "controller":
        node = Node(tmp_path, cfg, env={"SIM_CONTROLLER_DOWN": "1"})
        return node, "slurmctld at slurmctld.demo.gpucluster.internal:6817 did not answer within 900 s"
    if failure == "fabric-manager":
        node = Node(tmp_path, cfg, env={"SIM_FAIL_UNIT": "nvidia-fabricmanager"})
        return node, "nvidia-fabricmanager did not start; see 'journalctl -u nvidia-fabricmanager'"
    if failure == "fabric-manager-exits":
        # Active once, then gone: the version mismatch with the driver looks like this.
        node = Node(tmp_path, cfg, env={"SIM_EXITS_AFTER_START": "nvidia-fabricmanager"})
        return node, "FAIL: fabric manager (nvidia-fabricmanager) is not active"
    if failure == "image-slurm":
        node = Node(tmp_path, cfg, image_extra={"slurm-client": "23.11.5-1"})
        return node, "the image already has slurm-client 23.11.5-1, but software.slurm is 23.11.4"
    raise AssertionError(failure)


@pytest.mark.parametrize(
    "failure",
    [
        "kernel",
        "checksum",
        "gpu",
        "efa",
        "fabric-manager",
        "fabric-manager-exits",
        "slurm",
        "image-slurm",
        "controller",
    ],
)
def test_defect_stops_the_node_before_slurmd_and_abandons(tmp_path: Path, failure: str) -> None:
    node, reason = failing_node(tmp_path, failure)
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert not slurmd_started(run)
    assert abandoned(run) and not continued(run)
    assert reason in run.output
    tags = run.called("aws --region us-east-2 ec2 create-tags")
    assert len(tags) == 1 and f"Key={FAILURE_TAG},Value=" in tags[0]
    assert "FAILED" in (node.root / "dev/console").read_text()


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"SIM_EXITS_AFTER_START": "slurmd"}, "slurmd exited after it started"),
        (
            {"SIM_NODE_STATE": "IDLE+DRAIN+DYNAMIC_NORM+INVALID_REG"},
            "slurmctld rejected the registration of gpu-",
        ),
        ({"SIM_UNREGISTERED": "1"}, "did not register with slurmctld within 300 s"),
    ],
)
def test_node_that_never_joins_slurm_is_abandoned(
    tmp_path: Path, env: dict[str, str], reason: str
) -> None:
    node = Node(tmp_path, example("default"), env=env)
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert reason in run.output
    assert abandoned(run) and not continued(run)
    tag = run.called("aws --region us-east-2 ec2 create-tags")[0]
    assert reason.split(" gpu-")[0] in tag


def test_package_lists_update_waits_for_a_lock_taken_after_the_first_check(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), env={"SIM_LOCK_BUSY_FROM": "2", "SIM_LOCK_BUSY_FOR": "3"})
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    lock_checks = [i for i, call in enumerate(run.calls) if call.startswith("fuser")]
    assert len(lock_checks) == 5  # the first step's look, three held, one free
    assert lock_checks[-1] < run.index("apt-get -o DPkg::Lock::Timeout=1200 update")
    assert "apt/dpkg locks are held" in run.output


def test_failure_tag_value_is_one_line_of_allowed_characters(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    reason = "step start_slurmd failed: 'install_unit_dropin slurmd.service \"[Unit]\nX=\"' exited 1"
    result = subprocess.run(
        ["bash", "-c", 'STATE_DIR=/nowhere; source "$1"; tag_value "$2"', "_",
         str(node.bundle / "lib/failure.sh"), reason + " " + "y" * 300],
        capture_output=True, text=True, check=True,
    )
    value = result.stdout
    assert value.startswith("step start_slurmd failed:  install_unit_dropin slurmd.service  ")
    assert "\n" not in value and len(value) == 250
    assert set(value) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 +=._:/@-")


def test_kernel_mismatch_stops_before_any_package_install(tmp_path: Path) -> None:
    node, _ = failing_node(tmp_path, "kernel")
    run = node.run("compute", "gpu")
    assert run.called("apt-get") == []


def test_wrong_gpu_and_efa_counts_are_named(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), gpus=7, efa=31)
    run = node.run("compute", "gpu")
    assert "GPU count 7, want 8" in run.output
    assert "EFA interface count 31, want 32" in run.output


def test_head_runs_configless_controller_and_is_idempotent(tmp_path: Path) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg, gpus=0, efa=0, nvme_mounted=False)
    run = node.run("head")
    assert run.returncode == 0, run.output
    assert f"hostnamectl set-hostname {controller_hostname(cfg)}" in run.calls
    slurm_conf = (node.root / "etc/slurm/slurm.conf").read_text()
    assert "SlurmctldParameters=enable_configless" in slurm_conf
    state = node.root / "home/.slurm/state"
    assert state.is_dir() and stat.S_IMODE(state.stat().st_mode) == 0o700
    assert f"chown slurm:slurm {state}" in run.calls
    assert run.index(f"mount {node.root}/home") < run.index("systemctl start slurmctld")
    install = next(call for call in run.calls if " install " in call)
    assert "python3-boto3" in install
    # srun/sbatch on the head load the plugstack.conf that requires Pyxis: it is built here too.
    assert "libslurm-dev=" in install and "build-essential" in install
    assert (node.root / "usr/local/lib/slurm/spank_pyxis.so").exists()
    assert (node.root / "etc/slurm/plugstack.conf.d/pyxis.conf").read_text().startswith("required ")
    assert run.index("make -C") < run.index("systemctl start slurmctld")
    assert not continued(run) and not abandoned(run)
    agents = head_agents(cfg)
    for timer in agents.timers:
        assert f"systemctl start {timer}" in run.calls
    for path in agents.installed:
        assert (node.root / path.lstrip("/")).is_file()
    before = node.tree()
    again = node.run("head")
    assert again.returncode == 0, again.output
    assert [call for call in again.calls if call.startswith(CHANGING_CALLS)] == []
    assert node.tree() == before


def test_head_bundle_carries_the_agents_and_their_timers() -> None:
    cfg = example("default")
    agents = head_agents(cfg)
    assert {"agents/capacity_controller.py", "agents/node_cleanup.py"} <= set(agents.code)
    assert agents.timers == [
        "gpucluster-capacity-controller.timer",
        "gpucluster-head-update.timer",
        "gpucluster-node-cleanup.timer",
    ]
    assert f"GPUCLUSTER_CLUSTER={cfg.name}" in agents.installed["/etc/gpucluster/agents.env"]
    for unit in agents.installed:
        if unit.endswith(".service"):
            # Python agents run under python3, the head update under bash.
            command = agents.installed[unit].split("ExecStart=")[1].split()
            assert command[0] in ("/usr/bin/python3", "/bin/bash")
            script = command[1]
            assert script.startswith(f"{BUNDLE_INSTALL_DIR}/")
            assert script.removeprefix(f"{BUNDLE_INSTALL_DIR}/") in bundle_files(cfg)


def test_thin_user_data_unpacks_where_boot_units_look() -> None:
    from gpucluster.userdata import BundleRef, render_user_data

    cfg = example("default")
    ref = BundleRef(url="s3://bucket/key.tar.gz", sha256="0" * 64)
    for thin in (render_user_data(cfg, "head", None), render_user_data(cfg, "login", ref)):
        assert f"readonly BUNDLE_DIR={BUNDLE_INSTALL_DIR}\n" in thin


def test_login_gets_sackd_enroot_and_pyxis(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False)
    run = node.run("login")
    assert run.returncode == 0, run.output
    assert "sackd=23.11.4-1.2ubuntu5" in next(call for call in run.calls if " install " in call)
    dropin = (node.root / "etc/systemd/system/sackd.service.d/gpucluster.conf").read_text()
    assert dropin.startswith("[Unit]\nConditionPathExists=\n\n[Service]\nType=notify\nExecStart=\n")
    conf_server = "slurmctld.mixed.gpucluster.internal:6817"
    assert f"ExecStart=/usr/sbin/sackd --systemd --conf-server {conf_server}\n" in dropin
    assert run.index("nc -z") < run.index("systemctl start sackd") < run.index("scontrol ping")
    assert (node.root / "usr/local/lib/slurm/spank_pyxis.so").exists()
    assert (
        "ENROOT_RUNTIME_PATH /var/lib/enroot/runtime/user-$(id -u)"
        in (node.root / "etc/enroot/enroot.conf").read_text()
    )
    before = node.tree()
    again = node.run("login")
    assert [call for call in again.calls if call.startswith(CHANGING_CALLS)] == []
    assert node.tree() == before


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"SIM_FAIL_UNIT": "slurmctld"}, "slurmctld did not start"),
        ({"SIM_CONTROLLER_DOWN": "1"}, "slurmctld does not answer 'scontrol ping'"),
    ],
)
def test_head_failure_is_reported_without_lifecycle_calls(
    tmp_path: Path, env: dict[str, str], reason: str
) -> None:
    node = Node(tmp_path, example("default"), gpus=0, efa=0, env=env)
    run = node.run("head")
    assert run.returncode != 0
    assert reason in run.output
    assert run.called("aws --region us-east-2 autoscaling") == []
    assert len(run.called("aws --region us-east-2 ec2 create-tags")) == 1


def test_login_waits_for_the_controller_and_fails_without_it(tmp_path: Path) -> None:
    node = Node(
        tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False, env={"SIM_CONTROLLER_DOWN": "1"}
    )
    run = node.run("login")
    assert run.returncode != 0
    assert "slurmctld at slurmctld.mixed.gpucluster.internal:6817 did not answer" in run.output
    assert run.called("systemctl start sackd") == []
    assert run.called("aws --region us-east-1 autoscaling") == []


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


def test_rerun_on_a_joined_node_never_abandons_it(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    assert node.run("compute", "gpu").returncode == 0
    node.gpus = 7
    rerun = node.run("compute", "gpu")
    assert rerun.returncode != 0
    assert "GPU count 7, want 8" in rerun.output
    assert not abandoned(rerun)

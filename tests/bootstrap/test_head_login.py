"""The head node's and the login nodes' bootstrap against stub system commands: the
configless controller and its agents, sackd on login nodes, and their failures, which
make no lifecycle call (they are not in a launch-hooked group)."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest

from gpucluster import names
from gpucluster.bootstrap.bundle import bundle_files, head_agents
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.conf import controller_hostname
from tests.bootstrap_runs import CHANGING_CALLS, abandoned, continued, example
from tests.shell_harness import Node


def test_head_runs_configless_controller_and_is_idempotent(tmp_path: Path) -> None:
    cfg = example("default")
    node = Node(tmp_path, cfg, gpus=0, efa=0, nvme_mounted=False)
    run = node.run("head")
    assert run.returncode == 0, run.output
    assert f"hostnamectl set-hostname {controller_hostname(resolve(cfg))}" in run.calls
    slurm_conf = (node.root / "etc/slurm/slurm.conf").read_text()
    assert "SlurmctldParameters=enable_configless" in slurm_conf
    state = node.root / "home/.slurm/state"
    assert state.is_dir() and stat.S_IMODE(state.stat().st_mode) == 0o700
    assert f"chown slurm:slurm {state}" in run.calls
    assert run.index(f"mount {node.root}/home") < run.index("systemctl start slurmctld")
    install = next(call for call in run.calls if " install " in call)
    assert "python3-boto3" in install
    # The head builds Slurm (and Pyxis) with the pinned build's dependencies; no
    # distribution Slurm is installed.
    assert "build-essential" in install and "libjwt-dev" in install and "slurm" not in install
    # srun --mpi=pmix dlopens the unversioned libpmix.so, which only libpmix-dev ships.
    assert " libpmix-dev" in install
    # Built once from the verified source into a package on the shared /home, then installed.
    package = node.slurm_package
    assert package.is_file()
    assert (
        run.index(f"mount {node.root}/home") < run.index("make -C") < run.index("systemctl start slurmctld")
    )
    assert (node.root / "usr/sbin/slurmctld").is_file()
    assert (node.root / "usr/lib/systemd/system/slurmctld.service").is_file()
    assert "useradd --system --uid 64030 --gid slurm" in " ".join(run.calls)
    assert (node.root / "usr/local/lib/slurm/spank_pyxis.so").exists()
    pyxis = (node.root / "etc/slurm/plugstack.conf.d/pyxis.conf").read_text().splitlines()
    assert [line.split()[0] for line in pyxis if not line.startswith("#")] == ["required"]
    assert not continued(run) and not abandoned(run)
    (put,) = (node.state / "put-parameters").read_text().splitlines()
    assert f"--name {names.head_image_parameter(cfg)} --type String --overwrite" in put
    assert '{"ami_id":"ami-0123456789abcdef0","kernel":' in put
    agents = head_agents(resolve(cfg))
    for timer in agents.timers:
        assert f"systemctl start {timer}" in run.calls
    for path in agents.installed:
        assert (node.root / path.lstrip("/")).is_file()
    before = node.tree()
    again = node.run("head")
    assert again.returncode == 0, again.output
    assert [call for call in again.calls if call.startswith(CHANGING_CALLS)] == []
    assert node.tree() == before
    assert (node.state / "put-parameters").read_text().splitlines() == [put]  # published once


def test_head_bundle_carries_the_agents_and_their_timers() -> None:
    cfg = example("default")
    agents = head_agents(resolve(cfg))
    assert {
        "agents/gpucluster/agents/capacity_controller.py",
        "agents/gpucluster/agents/node_cleanup.py",
        "agents/gpucluster/agents/slurm_metrics.py",
        "agents/gpucluster/agents/topology_agent.py",
    } <= set(agents.code)
    assert agents.timers == [
        "gpucluster-capacity-controller.timer",
        "gpucluster-head-update.timer",
        "gpucluster-node-cleanup.timer",
        "gpucluster-node-repair.timer",
        "gpucluster-slurm-metrics.timer",
        "gpucluster-topology.timer",
    ]
    assert f"GPUCLUSTER_CLUSTER={cfg.name}" in agents.installed["/etc/gpucluster/agents.env"]
    bundle = bundle_files(resolve(cfg))
    for unit in agents.installed:
        if unit.endswith(".service"):
            # Python agents run as modules of the bundle's agents tree, the head update under bash.
            command = agents.installed[unit].split("ExecStart=")[1].split()
            if command[0] == "/usr/bin/python3":
                assert command[1] == "-m"
                script = NODE_LAYOUT.agent_source(command[2])
            else:
                assert command[0] == "/bin/bash"
                script = command[1]
            assert script.startswith(f"{NODE_LAYOUT.bundle_dir}/")
            assert script.removeprefix(f"{NODE_LAYOUT.bundle_dir}/") in bundle


def test_thin_user_data_unpacks_where_boot_units_look() -> None:
    from gpucluster.bootstrap.userdata import BundleRef, render_user_data

    cfg = example("default")
    ref = BundleRef(url="s3://bucket/key.tar.gz", sha256="0" * 64)
    for thin in (render_user_data(resolve(cfg), "head", None), render_user_data(resolve(cfg), "login", ref)):
        assert f"readonly BUNDLE_DIR={NODE_LAYOUT.bundle_dir}\n" in thin


def test_login_gets_sackd_enroot_and_pyxis(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False)
    run = node.run("login")
    assert run.returncode == 0, run.output
    install = next(call for call in run.calls if " install " in call)
    assert "sackd" not in install and " libpmix-dev" in install
    # sackd comes from the head's package, as every Slurm program does.
    assert (node.root / "usr/sbin/sackd").is_file()
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


def test_head_refuses_a_slurm_source_that_is_not_the_pinned_one(tmp_path: Path) -> None:
    node = Node(
        tmp_path, example("default"), gpus=0, efa=0, nvme_mounted=False, corrupt_downloads=("slurm-source",)
    )
    run = node.run("head")
    assert run.returncode != 0
    assert (
        f"has sha256 {hashlib.sha256(node.slurm_source).hexdigest()}, want {node.slurm.sha256}" in run.output
    )
    assert "it is not the pinned source, so it is not built" in run.output
    assert not run.called("make -C") and not node.slurm_package.exists()
    assert not run.called("systemctl start slurmctld")


def test_a_second_head_installs_the_package_without_building(tmp_path: Path) -> None:
    """A replaced head (or a new bundle) finds the package on EFS: no download, no compile."""
    node = Node(tmp_path, example("default"), gpus=0, efa=0, nvme_mounted=False)
    assert node.run("head").returncode == 0
    for marker in (node.root / "var/lib/gpucluster").glob("slurm-*.installed"):
        marker.unlink()
    again = node.run("head")
    assert again.returncode == 0, again.output
    assert not again.called("make") and not again.called("aws --region us-east-2 s3 cp")
    assert "Slurm 25.11.7 installed from " in again.output

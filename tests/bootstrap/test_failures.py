"""Every defect that must keep a compute node out of Slurm: it stops before slurmd,
abandons its launch and tags the instance with the reason; a joined node is never abandoned."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from gpucluster.names import BOOTSTRAP_FAILURE_TAG as FAILURE_TAG
from tests.bootstrap_runs import abandoned, continued, example, slurmd_started
from tests.shell_harness import Node

# Each defect: how the simulated node differs from a healthy one, and the text its failure
# reason must contain. "kernel" also pins the config's kernel, which the node then lacks.
DEFECTS: dict[str, tuple[dict[str, Any], str]] = {
    "kernel": ({"kernel": "6.8.0-1030-aws"}, "not the pinned kernel"),
    "checksum": ({"corrupt_downloads": ("enroot_4.2.1-1_amd64.deb",)}, "sha256"),
    "gpu": ({"gpus": 7}, "pre-join health check failed"),
    "efa": ({"efa": 31}, "pre-join health check failed"),
    "slurm-package": (
        {"publish_slurm_package": False},
        "no Slurm 25.11.7 package at ",
    ),
    "controller": (
        {"env": {"SIM_CONTROLLER_DOWN": "1"}},
        "slurmctld at slurmctld.demo.gpucluster.internal:6817 did not answer within 900 s",
    ),
    "fabric-manager": (
        {"env": {"SIM_FAIL_UNIT": "nvidia-fabricmanager"}},
        "nvidia-fabricmanager did not start; see 'journalctl -u nvidia-fabricmanager'",
    ),
    # Active once, then gone: the version mismatch with the driver looks like this.
    "fabric-manager-exits": (
        {"env": {"SIM_EXITS_AFTER_START": "nvidia-fabricmanager"}},
        "FAIL: fabric manager (nvidia-fabricmanager) is not active",
    ),
    "image-slurm": (
        {"image_extra": {"slurm-client": "23.11.5-1"}},
        "the image has the distribution's slurm-client 23.11.5-1; gpucluster installs its own Slurm 25.11.7",
    ),
}


def failing_node(tmp_path: Path, failure: str) -> tuple[Node, str]:
    """A compute node with one defect, and the text its failure reason must contain."""
    cfg = example("default")
    if failure == "kernel":
        cfg = cfg.model_copy(update={"image": cfg.image.model_copy(update={"kernel": "6.8.0-1021-aws"})})
    changes, reason = DEFECTS[failure]
    return Node(tmp_path, cfg, **changes), reason


@pytest.mark.parametrize("failure", list(DEFECTS))
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
def test_node_that_never_joins_slurm_is_abandoned(tmp_path: Path, env: dict[str, str], reason: str) -> None:
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
        [
            "bash",
            "-c",
            'STATE_DIR=/nowhere; source "$1"; tag_value "$2"',
            "_",
            str(node.bundle / "lib/failure.sh"),
            reason + " " + "y" * 300,
        ],
        capture_output=True,
        text=True,
        check=True,
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


def test_rerun_on_a_joined_node_never_abandons_it(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    assert node.run("compute", "gpu").returncode == 0
    node.gpus = 7
    rerun = node.run("compute", "gpu")
    assert rerun.returncode != 0
    assert "GPU count 7, want 8" in rerun.output
    assert not abandoned(rerun)

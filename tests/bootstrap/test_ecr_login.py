"""Users log in to ECR through a root helper (gpucluster.bootstrap.ecr_login), which hands them a
registry password, not the role's credentials: login and compute nodes install it and the rule that lets
every user run it (checked by visudo before it goes in, as a malformed file in sudoers.d stops
sudo for everyone), and the helper takes nothing from its caller but a region."""

from __future__ import annotations

import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap import ecr_login
from gpucluster.resolved import resolve
from tests.bootstrap_runs import abandoned, example
from tests.shell_harness import Node


def _installed(node: Node, path: str) -> Path:
    return node.root / path.lstrip("/")


@pytest.mark.parametrize(("role", "group"), [("login", None), ("compute", "gpu")])
def test_login_and_compute_nodes_let_every_user_run_the_helper(
    tmp_path: Path, role: str, group: str | None
) -> None:
    node = Node(tmp_path, example("default"), nvme_mounted=role == "compute")
    run = node.run(role, group)
    assert run.returncode == 0, run.output
    files = ecr_login.helper_files(resolve(node.cfg))
    for path, mode in ((ecr_login.HELPER, 0o755), (ecr_login.SUDOERS, 0o440)):
        installed = _installed(node, path)
        assert installed.read_text() == files[path]
        assert stat.S_IMODE(installed.stat().st_mode) == mode
    tree = "files/login" if role == "login" else f"files/compute-{group}"
    assert run.called(f"visudo -c -q -f {node.bundle}/{tree}{ecr_login.SUDOERS}")
    rule = [line for line in files[ecr_login.SUDOERS].splitlines() if not line.startswith("#")]
    assert rule == [f"ALL ALL=(root) NOPASSWD: {ecr_login.HELPER}"]


def test_the_head_has_no_helper(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), gpus=0, efa=0, nvme_mounted=False)
    assert node.run("head").returncode == 0
    assert not _installed(node, ecr_login.HELPER).exists()
    assert not _installed(node, ecr_login.SUDOERS).exists()


def test_a_sudoers_rule_visudo_refuses_is_not_installed_and_stops_the_node(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    node.env["SIM_SUDOERS_BAD"] = ecr_login.SUDOERS
    run = node.run("compute", "gpu")
    assert run.returncode != 0 and abandoned(run)
    assert f"the bundle's {ecr_login.SUDOERS} does not parse" in run.output
    assert not _installed(node, ecr_login.SUDOERS).exists()


def test_the_rendered_rule_parses(tmp_path: Path) -> None:
    visudo = shutil.which("visudo")
    if visudo is None:
        pytest.skip("visudo is not installed (apt-get install sudo)")
    rule = tmp_path / "gpucluster-ecr"
    rule.write_text(ecr_login.helper_files(resolve(example("default")))[ecr_login.SUDOERS])
    done = subprocess.run([visudo, "-c", "-f", str(rule)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    "arguments",
    [[], ["us-east-2", "--endpoint-url", "http://attacker"], ["--profile"], ["us-east-2;id"], ["../us"]],
)
def test_the_helper_takes_one_region_and_nothing_else(tmp_path: Path, arguments: list[str]) -> None:
    helper = tmp_path / "gpucluster-ecr-password"
    helper.write_text(ecr_login.helper_files(resolve(example("default")))[ecr_login.HELPER])
    done = subprocess.run(["bash", str(helper), *arguments], capture_output=True, text=True, check=False)
    assert done.returncode == 64
    assert "usage: sudo -n" in done.stderr and "an AWS region such as us-east-2" in done.stderr

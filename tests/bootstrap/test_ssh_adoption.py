"""ssh into compute nodes (pam_slurm_adopt): the rendered account lines and access file, and
what the compute bootstrap does to an Ubuntu image's sshd PAM stack (tests/shell_harness.py).
tests/integration/test_ssh_adoption.py runs the same account lines against real slurmd."""

from __future__ import annotations

import dataclasses
import tarfile
from pathlib import Path

from gpucluster.bootstrap import ssh_adoption
from gpucluster.resolved import resolve
from tests.bootstrap_runs import abandoned, example
from tests.shell_downloads import slurm_package_fixture
from tests.shell_harness import INSTANCE_ID, Node
from tests.ubuntu_pam import COMMON_SESSION, SSHD


def _account_lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line and not line.startswith("#")]


def test_admins_first_then_pam_slurm_adopt_denying_whatever_it_cannot_adopt() -> None:
    files = ssh_adoption.adoption_files(resolve(example("default")))
    account = _account_lines(files["/etc/pam.d/gpucluster-slurm-adopt"])
    assert account == [
        ["account", "sufficient", "pam_access.so", "accessfile=/etc/security/gpucluster-ssh-access.conf"],
        [
            "account",
            "required",
            "pam_slurm_adopt.so",
            "action_no_jobs=deny",
            "action_unknown=newest",
            "action_adopt_failure=deny",
            "action_generic_failure=deny",
            "nodename=@NODE_NAME@",
        ],
    ]
    access = _account_lines(files["/etc/security/gpucluster-ssh-access.conf"])
    assert access == [["+:root", "(sudo):ALL"], ["-:ALL:ALL"]]


def test_compute_bootstrap_puts_adoption_into_sshd_only(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    # The module comes with the pinned Slurm package, never a distribution's libpam-slurm-adopt.
    assert not any("libpam-slurm-adopt" in call for call in run.calls)
    assert (node.root / "usr/lib/x86_64-linux-gnu/security/pam_slurm_adopt.so").is_file()
    sshd = (node.root / "etc/pam.d/sshd").read_text().splitlines()
    # Last in the account stack, after the image's own account checks.
    account = sshd.index("@include common-account")
    assert sshd[account + 1] == "@include gpucluster-slurm-adopt"
    assert not any(line.startswith("account") for line in sshd[account + 1 :])
    # The session stack is common-session less pam_systemd, for sshd alone.
    assert "@include common-session" not in sshd and "@include gpucluster-sshd-session" in sshd
    session = (node.root / "etc/pam.d/gpucluster-sshd-session").read_text()
    assert session.splitlines() == [line for line in COMMON_SESSION.splitlines() if "pam_systemd" not in line]
    assert (node.root / "etc/pam.d/common-session").read_text() == COMMON_SESSION
    # The node's own Slurm name in the account line, as ssh_adoption.for_node writes it.
    node_name = f"gpu-{INSTANCE_ID}"
    for path, text in ssh_adoption.adoption_files(resolve(node.cfg)).items():
        assert (node.root / path.lstrip("/")).read_text() == ssh_adoption.for_node(text, node_name)
    assert f"nodename={node_name}" in (node.root / "etc/pam.d/gpucluster-slurm-adopt").read_text()


def test_login_nodes_keep_the_images_sshd_stack(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), nvme_mounted=False)
    run = node.run("login")
    assert run.returncode == 0, run.output
    assert (node.root / "etc/pam.d/sshd").read_text() == SSHD
    assert not (node.root / "etc/pam.d/gpucluster-slurm-adopt").exists()


def test_an_sshd_stack_without_ubuntus_anchor_stops_the_node(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"))
    (node.root / "etc/pam.d/sshd").write_text(SSHD.replace("@include common-account\n", ""))
    run = node.run("compute", "gpu")
    assert run.returncode != 0 and abandoned(run)
    assert "/etc/pam.d/sshd has no '@include common-account' line" in run.output


def test_the_head_builds_pam_slurm_adopt_into_the_slurm_package(tmp_path: Path) -> None:
    """From the pinned source's contribs, against the libslurm just built, after the main
    tree: the stand-in source installs the module only from that directory."""
    node = Node(tmp_path, example("default"))
    run = node.run("head")
    assert run.returncode == 0, run.output
    contrib = next(call for call in run.called("make -C") if "contribs/pam_slurm_adopt" in call)
    assert run.calls.index(contrib) > run.index("make -C") and " install DESTDIR=" in contrib
    with tarfile.open(node.slurm_package) as package:
        assert "usr/lib/x86_64-linux-gnu/security/pam_slurm_adopt.so" in package.getnames()


def test_a_slurm_package_without_the_module_stops_the_compute_node(tmp_path: Path) -> None:
    """PAM could not load the module: sshd would then refuse every user but the administrators."""
    node = Node(tmp_path, example("default"))
    without = tuple(path for path in node.slurm.required_files if not path.endswith("/pam_slurm_adopt.so"))
    node.slurm_package.parent.mkdir(parents=True)
    node.slurm_package.write_bytes(
        slurm_package_fixture(dataclasses.replace(node.slurm, required_files=without))
    )
    run = node.run("compute", "gpu")
    assert run.returncode != 0 and abandoned(run)
    assert "has no pam_slurm_adopt.so in /usr/lib/x86_64-linux-gnu/security" in run.output

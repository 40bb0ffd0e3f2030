"""ssh into compute nodes (pam_slurm_adopt): the rendered account lines and access file, and
what the compute bootstrap does to an Ubuntu image's sshd PAM stack (tests/shell_harness.py).
tests/integration/test_ssh_adoption.py runs the same account lines against real slurmd."""

from __future__ import annotations

from pathlib import Path

from gpucluster.bootstrap import ssh_adoption
from tests.bootstrap_runs import abandoned, example
from tests.shell_harness import INSTANCE_ID, SLURM_DEBIAN_VERSION, Node
from tests.ubuntu_pam import COMMON_SESSION, SSHD


def _account_lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line and not line.startswith("#")]


def test_admins_first_then_pam_slurm_adopt_denying_whatever_it_cannot_adopt() -> None:
    files = ssh_adoption.adoption_files(example("default"))
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
    install = next(call for call in run.calls if " install " in call and "slurmd=" in call)
    assert f"libpam-slurm-adopt={SLURM_DEBIAN_VERSION}" in install
    assert "libpam-slurm-adopt" in (node.state / "holds").read_text().split()
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
    for path, text in ssh_adoption.adoption_files(node.cfg).items():
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


def test_a_module_outside_pams_directory_stops_the_node(tmp_path: Path) -> None:
    """Debian 12's libpam-slurm-adopt installed /lib/security/pam_slurm_adopt.so, which PAM
    never loads: sshd would then refuse every user but the administrators."""
    node = Node(tmp_path, example("default"), env={"SIM_PAM_MODULE_DIR": "lib/security"})
    run = node.run("compute", "gpu")
    assert run.returncode != 0 and abandoned(run)
    assert "left no pam_slurm_adopt.so in /usr/lib/x86_64-linux-gnu/security" in run.output

"""Every role keeps instance metadata from users before it does anything else (lib/metadata.sh,
gpucluster.bootstrap.metadata_guard), against stub iptables that keep the kernel's rules
(tests/shell_harness.py): the guard's chain once, one jump to it from OUTPUT however often it
runs, a node that cannot install it stops before it reads the munge key, and a head updated in
place gets it too. tests/bootstrap/test_metadata_guard_kernel.py runs the same script in a
real kernel."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from gpucluster.bootstrap import metadata_guard
from gpucluster.resolved import resolve
from tests.bootstrap.test_head_update import _booted_head, _publish, _resized
from tests.bootstrap_runs import abandoned, example
from tests.shell_harness import Node, Run

ROLES = [("head", None), ("login", None), ("compute", "gpu")]
JUMP = f"-d {metadata_guard.METADATA_ADDRESS} -j {metadata_guard.CHAIN}"
MUNGE_KEY_READ = "aws --region us-east-2 secretsmanager get-secret-value"


def _node(tmp_path: Path, role: str) -> Node:
    return Node(tmp_path, example("default"), nvme_mounted=role == "compute")


def _run(node: Node, role: str, group: str | None) -> Run:
    run = node.run(role, group)
    assert run.returncode == 0, run.output
    return run


def _steps(run: Run) -> list[str]:
    return [line.split("step ", 1)[1] for line in run.output.splitlines() if "] step " in line]


def _output_rules(node: Node) -> list[str]:
    return (node.state / "iptables-output").read_text().splitlines()


@pytest.mark.parametrize(("role", "group"), ROLES)
def test_each_role_guards_metadata_first_and_at_every_boot(
    tmp_path: Path, role: str, group: str | None
) -> None:
    node = _node(tmp_path, role)
    run = _run(node, role, group)
    # Compute nodes start their lifecycle heartbeats (root's, through IMDS) first, so that a
    # guard waiting for apt cannot let the launch hook time out.
    assert _steps(run)[: 2 if role == "compute" else 1][-1] == "restrict_metadata"
    assert run.index("iptables -w 60 -I OUTPUT 1") < run.index("fuser")
    assert run.index("iptables -w 60 -I OUTPUT 1") < run.index(MUNGE_KEY_READ)
    assert (node.state / "iptables-chain").read_text() == metadata_guard.rules()
    assert _output_rules(node) == [JUMP]
    for path, text in metadata_guard.guard_files(resolve(node.cfg)).items():
        installed = node.root / path.lstrip("/")
        assert installed.read_text() == text
    script = node.root / metadata_guard.SCRIPT.lstrip("/")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert (node.state / "enabled" / metadata_guard.UNIT).exists()
    assert "instance metadata (169.254.169.254/32) answers root only" in run.output


def test_the_rules_let_root_on_and_refuse_everyone_else() -> None:
    assert metadata_guard.rules().splitlines() == [
        "*filter",
        ":GPUCLUSTER_IMDS - [0:0]",
        "-A GPUCLUSTER_IMDS -m owner --uid-owner 0 -j RETURN",
        "-A GPUCLUSTER_IMDS -j REJECT",
        "COMMIT",
    ]


def test_the_boot_unit_runs_the_guard_before_the_network() -> None:
    unit = metadata_guard.guard_files(resolve(example("default")))[metadata_guard.UNIT_FILE].splitlines()
    assert "DefaultDependencies=no" in unit
    assert "Before=network-pre.target shutdown.target" in unit and "Wants=network-pre.target" in unit
    assert f"ExecStart={metadata_guard.SCRIPT}" in unit
    assert "Type=oneshot" in unit and "WantedBy=multi-user.target" in unit


def test_a_second_run_replaces_the_chain_and_adds_no_jump(tmp_path: Path) -> None:
    node = _node(tmp_path, "compute")
    _run(node, "compute", "gpu")
    again = _run(node, "compute", "gpu")
    assert _output_rules(node) == [JUMP]
    assert (node.state / "iptables-chain").read_text() == metadata_guard.rules()
    # Applied again (a changed chain reaches the kernel), but nothing added.
    assert again.called("iptables-restore") and not again.called("iptables -w 60 -I")
    assert not again.called(f"systemctl enable {metadata_guard.UNIT}")
    assert not again.called("systemctl daemon-reload")


@pytest.mark.parametrize(("role", "group"), ROLES)
def test_a_guard_that_fails_stops_the_node_before_the_munge_key(
    tmp_path: Path, role: str, group: str | None
) -> None:
    node = _node(tmp_path, role)
    node.env["SIM_IPTABLES_FAIL"] = "line 3 failed"
    run = node.run(role, group)
    assert run.returncode != 0
    assert "iptables-restore v1.8.10 (nf_tables): line 3 failed" in run.output
    assert f"{metadata_guard.SCRIPT} could not keep instance metadata from users" in run.output
    assert "the munge key, so this node stops" in run.output and "iptables -S OUTPUT" in run.output
    assert not run.called(MUNGE_KEY_READ)
    assert not (node.state / "iptables-output").exists()
    if role == "compute":
        assert abandoned(run)


def test_an_image_without_iptables_installs_it_before_the_guard(tmp_path: Path) -> None:
    node = _node(tmp_path, "login")
    (node.state / "dpkg" / metadata_guard.PACKAGE).unlink()
    run = _run(node, "login", None)
    install = run.index("apt-get -o DPkg::Lock::Timeout=1200 install -y -q --no-install-recommends iptables")
    assert install < run.index("iptables-restore")
    assert _output_rules(node) == [JUMP]


def test_a_head_that_booted_without_the_guard_gets_it_from_its_next_update(tmp_path: Path) -> None:
    node, _ = _booted_head(tmp_path)
    for made in ("iptables-chain", "iptables-output"):
        (node.state / made).unlink()
    (node.root / metadata_guard.SCRIPT.lstrip("/")).unlink()
    _publish(node, _resized(3), "second.tar.gz")
    update = node.run_script("bin/update-head.sh")
    assert update.returncode == 0, update.output
    assert update.index("iptables-restore") < update.index("systemctl restart slurmctld")
    assert _output_rules(node) == [JUMP]
    assert (node.state / "iptables-chain").read_text() == metadata_guard.rules()

"""The node names' block of /etc/hosts: built from `scontrol -o show nodes`, the rest of the
file untouched, rewritten only when it changes, kept when slurmctld does not answer."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gpucluster.agents import node_hosts
from gpucluster.agents.scontrol import CommandResult
from tests.agent_scripts import run_from_bundle_copy

SYSTEM_HOSTS = (
    "127.0.0.1 localhost\n# The following lines are desirable for IPv6 capable hosts\n::1 ip6-localhost\n"
)
NODES = (
    "NodeName=gpu-i-0a1b2c3d4e5f60001 Arch=x86_64 CoresPerSocket=48 NodeAddr=10.0.1.17 "
    "NodeHostName=gpu-i-0a1b2c3d4e5f60001 State=IDLE+DYNAMIC_NORM Reason=none\n"
    "NodeName=gpu-i-0a1b2c3d4e5f60002 NodeAddr=10.0.1.18 State=MIXED+DYNAMIC_NORM\n"
    # Not registered yet: Slurm shows the name as its address.
    "NodeName=gpu-i-0a1b2c3d4e5f60003 NodeAddr=gpu-i-0a1b2c3d4e5f60003 State=DOWN*+DYNAMIC_NORM\n"
)


class Scontrol:
    def __init__(self, stdout: str = NODES, code: int = 0) -> None:
        self.stdout, self.code = stdout, code
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.calls.append(list(argv))
        stderr = "" if self.code == 0 else "Unable to contact slurm controller (connect failure)"
        return CommandResult(tuple(argv), self.code, self.stdout if self.code == 0 else "", stderr)


def block_of(text: str) -> list[str]:
    lines = text.splitlines()
    return lines[lines.index(node_hosts.BEGIN) + 1 : lines.index(node_hosts.END)]


def test_registered_nodes_get_their_address_and_the_system_lines_stay(tmp_path: Path):
    hosts = tmp_path / "hosts"
    hosts.write_text(SYSTEM_HOSTS)
    hosts.chmod(0o644)
    scontrol = Scontrol()
    assert node_hosts.refresh(hosts, scontrol) is True
    assert scontrol.calls == [["scontrol", "-o", "show", "nodes"]]
    text = hosts.read_text()
    assert text.startswith(SYSTEM_HOSTS)
    assert block_of(text) == ["10.0.1.17 gpu-i-0a1b2c3d4e5f60001", "10.0.1.18 gpu-i-0a1b2c3d4e5f60002"]
    assert hosts.stat().st_mode & 0o777 == 0o644


def test_an_unchanged_block_leaves_the_file_alone(tmp_path: Path):
    hosts = tmp_path / "hosts"
    hosts.write_text(SYSTEM_HOSTS)
    node_hosts.refresh(hosts, Scontrol())
    inode = hosts.stat().st_ino
    assert node_hosts.refresh(hosts, Scontrol()) is False
    assert hosts.stat().st_ino == inode, "not rewritten: Enroot's bind of the file stays current"


def test_a_gone_node_leaves_the_block_and_a_new_one_joins_it(tmp_path: Path):
    hosts = tmp_path / "hosts"
    hosts.write_text(SYSTEM_HOSTS)
    node_hosts.refresh(hosts, Scontrol())
    hosts.write_text(hosts.read_text() + "10.9.9.9 added-by-an-admin\n")
    later = (
        "NodeName=gpu-i-0a1b2c3d4e5f60002 NodeAddr=10.0.1.18\n"
        "NodeName=gpu-i-0a1b2c3d4e5f60004 NodeAddr=10.0.2.4\n"
    )
    assert node_hosts.refresh(hosts, Scontrol(later)) is True
    text = hosts.read_text()
    assert block_of(text) == ["10.0.1.18 gpu-i-0a1b2c3d4e5f60002", "10.0.2.4 gpu-i-0a1b2c3d4e5f60004"]
    assert text.count(node_hosts.BEGIN) == 1
    assert "10.9.9.9 added-by-an-admin" in text.splitlines(), "a line outside the block is the admin's"


def test_a_block_that_lost_its_end_marker_keeps_the_lines_after_it():
    hosts = f"127.0.0.1 localhost\n{node_hosts.BEGIN}\n10.0.1.9 gpu-old\n10.9.9.9 admins-host\n"
    text = node_hosts.with_block(hosts, {"gpu-i-0a1b2c3d4e5f60001": "10.0.1.17"})
    assert "10.9.9.9 admins-host" in text.splitlines() and "10.0.1.9 gpu-old" in text.splitlines()
    assert text.count(node_hosts.BEGIN) == 1 and block_of(text) == ["10.0.1.17 gpu-i-0a1b2c3d4e5f60001"]


def test_names_that_are_not_host_names_and_odd_addresses_are_left_out():
    records = [
        {"NodeName": "gpu-i-0a1b2c3d4e5f60001", "NodeAddr": "10.0.1.17"},
        {"NodeName": "evil\n10.6.6.6 login", "NodeAddr": "10.0.1.19"},
        {"NodeName": "Upper", "NodeAddr": "10.0.1.20"},
        {"NodeName": "v6", "NodeAddr": "fd00::1"},
        {"NodeName": "spoof", "NodeAddr": "10.0.1.21 other-name"},
    ]
    assert node_hosts.node_addresses(records) == {"gpu-i-0a1b2c3d4e5f60001": "10.0.1.17", "v6": "fd00::1"}


def test_slurmctld_not_answering_keeps_the_last_block(tmp_path: Path):
    hosts = tmp_path / "hosts"
    hosts.write_text(SYSTEM_HOSTS)
    node_hosts.refresh(hosts, Scontrol())
    before = hosts.read_text()
    try:
        node_hosts.refresh(hosts, Scontrol(code=1))
    except node_hosts.scontrol.ScontrolError as error:
        assert "Unable to contact slurm controller" in str(error)
    else:
        raise AssertionError("a failed scontrol must not pass for an empty cluster")
    assert hosts.read_text() == before


def test_the_bundled_script_runs_with_the_images_python_and_says_what_failed(tmp_path: Path):
    hosts = tmp_path / "hosts"
    hosts.write_text(SYSTEM_HOSTS)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    refusal = "slurm_load_node error: Unable to contact slurm controller"
    (bin_dir / "scontrol").write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
    (bin_dir / "scontrol").chmod(0o755)
    done = run_from_bundle_copy(
        tmp_path, "gpucluster.agents.node_hosts", "--hosts-file", str(hosts), tools=bin_dir
    )
    assert done.returncode == 1
    assert "Unable to contact slurm controller" in done.stderr and "keeps its last block" in done.stderr
    assert hosts.read_text() == SYSTEM_HOSTS

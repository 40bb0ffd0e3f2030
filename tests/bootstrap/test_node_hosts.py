"""The node names' program and timer as login and compute nodes install them: the program
keeps the block and never fails a Prolog, the units pass systemd's own check, the compute
bootstrap has the program before slurmd can run a job and the timer once scontrol answers.
tests/integration/test_node_hosts.py runs the program from a real slurmd's Prolog."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.agent_package import agent_tree, write_tree
from gpucluster.bootstrap import node_hosts
from gpucluster.bootstrap.bundle import NODE_AGENTS, bundle_files
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.site import SlurmSite
from tests.bootstrap_runs import example
from tests.shell_harness import Node
from tests.shellcheck import assert_shellcheck_clean

NODES = "NodeName=gpu-i-0a1b2c3d4e5f60001 NodeAddr=10.0.1.17 State=IDLE\n"


def _host(tmp_path: Path, scontrol_exit: int) -> tuple[SlurmSite, Path]:
    """A site whose program finds a stub scontrol and keeps a hosts file under `tmp_path`."""
    tools = tmp_path / "bin"
    tools.mkdir()
    answer = f"printf '{NODES}'" if scontrol_exit == 0 else "echo 'Unable to contact slurm controller' >&2"
    (tools / "scontrol").write_text(f"#!/bin/sh\n{answer}\nexit {scontrol_exit}\n")
    (tools / "scontrol").chmod(0o755)
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 localhost\n")
    site = SlurmSite(
        hosts_file=str(hosts),
        node_hosts_program=str(tmp_path / "gpucluster-node-hosts"),
        healthcheck_path=f"{tools}:/usr/bin:/bin",
    )
    program = Path(site.node_hosts_program)
    # The bundle's agents tree alone; -S keeps the test environment's editable gpucluster out.
    agents = tmp_path / "agents"
    agents.mkdir()
    write_tree(agent_tree(NODE_AGENTS), agents)
    text = node_hosts.program(resolve(example("default")), site, str(agents), python=f"{sys.executable} -S")
    program.write_text(text)
    program.chmod(0o755)
    return site, hosts


def _run(site: SlurmSite, **env: str) -> subprocess.CompletedProcess[str]:
    # slurmd gives a Prolog almost no environment; the program sets what it needs.
    return subprocess.run(
        [site.node_hosts_program], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def test_the_program_writes_the_block(tmp_path: Path):
    site, hosts = _host(tmp_path, scontrol_exit=0)
    done = _run(site)
    assert done.returncode == 0, done.stderr
    assert "10.0.1.17 gpu-i-0a1b2c3d4e5f60001" in hosts.read_text().splitlines()


def test_a_failed_refresh_fails_the_timer_but_never_a_prolog(tmp_path: Path):
    site, hosts = _host(tmp_path, scontrol_exit=1)
    timer = _run(site)
    assert timer.returncode == 1 and "refresh failed" in timer.stderr
    prolog = _run(site, SLURM_SCRIPT_CONTEXT="prolog_slurmd")
    assert prolog.returncode == 0, "a Prolog exiting non-zero would drain the node"
    assert "Unable to contact slurm controller" in prolog.stderr and "refresh failed" in prolog.stderr
    assert hosts.read_text() == "127.0.0.1 localhost\n"


def test_the_program_is_shellcheck_clean(tmp_path: Path):
    files = node_hosts.node_files(resolve(example("default")), SlurmSite(), NODE_LAYOUT)
    assert_shellcheck_clean({SlurmSite().node_hosts_program: files[SlurmSite().node_hosts_program]}, tmp_path)


def test_the_units_pass_systemd_analyze_verify(tmp_path: Path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    site, _ = _host(tmp_path, scontrol_exit=0)
    units = tmp_path / "units"
    units.mkdir()
    for path, text in node_hosts.node_files(resolve(example("default")), site, NODE_LAYOUT).items():
        if path.startswith("/etc/systemd/system/"):
            (units / Path(path).name).write_text(text)
    verified = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(p) for p in units.iterdir())],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr


def test_login_and_every_compute_group_install_it_and_the_head_does_not():
    files = bundle_files(resolve(example("default")))
    program = SlurmSite().node_hosts_program
    trees = {path.split("/")[1] for path in files if path.endswith(program)}
    groups = {f"compute-{group.name}" for group in resolve(example("default")).groups}
    assert trees == {"login", *groups}
    for tree in trees:
        assert f"files/{tree}/etc/systemd/system/gpucluster-node-hosts.timer" in files


def test_the_compute_bootstrap_has_the_program_before_slurmd_and_the_timer_after_it_registered(
    tmp_path: Path,
):
    node = Node(tmp_path, example("default"))
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    program = node.root / SlurmSite().node_hosts_program.lstrip("/")
    assert program.is_file() and os.access(program, os.X_OK)
    output = run.output
    installed = output.index(f"installed {SlurmSite().node_hosts_program}")
    assert installed < output.index("step start_slurmd") < output.index("step start_node_hosts_timer")
    assert run.index("systemctl start slurmd") < run.index("systemctl start gpucluster-node-hosts.timer")
    assert "systemctl enable gpucluster-node-hosts.timer" in run.calls


def test_a_custom_site_renders_its_own_paths():
    site = dataclasses.replace(SlurmSite(), hosts_file="/srv/hosts", node_hosts_program="/opt/bin/hosts")
    files = node_hosts.node_files(resolve(example("default")), site, NODE_LAYOUT)
    assert set(files) == {"/opt/bin/hosts", *(f"/etc/systemd/system/{unit}" for unit in node_hosts.UNITS)}
    assert '--hosts-file "/srv/hosts"' in files["/opt/bin/hosts"]
    assert "ExecStart=/opt/bin/hosts" in files["/etc/systemd/system/gpucluster-node-hosts.service"]

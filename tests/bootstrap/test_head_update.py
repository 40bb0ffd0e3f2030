"""The head node's update path: a new bundle reaches the running head in place.

The head bootstraps from the bundle of one config; the cluster's SSM pointer then names
the bundle of a changed config, and bin/update-head.sh (run by its systemd timer) must
download it, check it, install the new controller files and reconfigure slurmctld (or
restart it, where `scontrol reconfigure` cannot apply the change), once.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from gpucluster.bootstrap.bundle import bundle_files, head_agents
from gpucluster.bootstrap.userdata import bundle_archive
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.conf import max_node_count
from tests.bootstrap_runs import CHANGING_CALLS, example
from tests.shell_harness import Node

UNIT = "etc/systemd/system/gpucluster-head-update"


def _resized(count: int):
    cfg = example("default")
    group = cfg.compute_groups[0].model_copy(update={"count": count})
    return cfg.model_copy(update={"compute_groups": [group]})


HEAD_SLURM_CONF = "files/head/etc/slurm/slurm.conf"


def _publish(node: Node, cfg, name: str, *, tamper: bool = False, debug: bool = False) -> str:
    """Puts cfg's bundle where the s3 stub serves it and points the SSM stub at it;
    `debug` raises SlurmctldDebug, a setting `scontrol reconfigure` applies."""
    files = bundle_files(resolve(cfg), node.site)
    if debug:
        files[HEAD_SLURM_CONF] = files[HEAD_SLURM_CONF].replace("SlurmctldDebug=info", "SlurmctldDebug=debug")
        assert "SlurmctldDebug=debug" in files[HEAD_SLURM_CONF]
    archive = bundle_archive(files)
    digest = hashlib.sha256(archive).hexdigest()
    (node.fixtures / name).write_bytes(archive + (b"tampered" if tamper else b""))
    pointer = f"{digest} s3://cdk-assets/{name}"
    (node.state / "bundle-pointer").write_text(pointer + "\n")
    return pointer


def _booted_head(tmp_path: Path) -> tuple[Node, str]:
    """A head bootstrapped from the 2-node config, its bundle recorded as the user data does."""
    node = Node(tmp_path, _resized(2), gpus=0, efa=0, nvme_mounted=False)
    first = _publish(node, node.cfg, "first.tar.gz")
    run = node.run("head")
    assert run.returncode == 0, run.output
    applied = node.root / NODE_LAYOUT.applied_bundle.lstrip("/")
    applied.parent.mkdir(parents=True, exist_ok=True)
    applied.write_text(first + "\n")
    return node, first


def _slurm_conf(node: Node) -> str:
    return (node.root / "etc/slurm/slurm.conf").read_text()


def test_the_head_installs_the_update_timer() -> None:
    agents = head_agents(resolve(example("default")))
    assert "gpucluster-head-update.timer" in agents.timers
    service = agents.installed["/etc/systemd/system/gpucluster-head-update.service"]
    assert f"ExecStart=/bin/bash {NODE_LAYOUT.bundle_dir}/bin/update-head.sh\n" in service
    assert "bin/update-head.sh" in bundle_files(resolve(example("default")))


def test_nothing_happens_while_the_pointer_names_the_applied_bundle(tmp_path: Path) -> None:
    node, _ = _booted_head(tmp_path)
    before = node.tree()
    run = node.run_script("bin/update-head.sh")
    assert run.returncode == 0, run.output
    assert "is applied; nothing to do" in run.output
    assert run.called("aws --region us-east-2 s3") == [] and run.called("scontrol reconfigure") == []
    assert node.tree() == before


def test_a_resize_reaches_the_running_head_in_place(tmp_path: Path) -> None:
    node, _ = _booted_head(tmp_path)
    assert f"MaxNodeCount={max_node_count(resolve(_resized(2)))}\n" in _slurm_conf(node)
    second = _publish(node, _resized(1), "second.tar.gz")
    run = node.run_script("bin/update-head.sh")
    assert run.returncode == 0, run.output
    assert f"MaxNodeCount={max_node_count(resolve(_resized(1)))}\n" in _slurm_conf(node)
    # In place, on the same instance: a new MaxNodeCount is one of the settings that
    # `scontrol reconfigure` cannot apply, so slurmctld restarts (jobs are kept).
    assert "MaxNodeCount changes" in run.output
    assert run.called("scontrol reconfigure") == []
    assert [c for c in run.calls if "slurmctld" in c and c.startswith("systemctl")] == [
        "systemctl restart slurmctld"
    ]
    assert run.index("systemctl restart slurmctld") < run.index("scontrol ping")
    assert (node.root / NODE_LAYOUT.applied_bundle.lstrip("/")).read_text() == second + "\n"
    installed = node.root / NODE_LAYOUT.bundle_dir.lstrip("/")
    assert (installed / "files/head/etc/slurm/slurm.conf").read_text() == _slurm_conf(node)
    for step in ("read_pointer", "fetch_bundle", "verify_bundle", "swap_bundle", "apply_slurm_config"):
        assert f"step {step}" in run.output
    # Idempotent: the next timer run finds the bundle applied and changes nothing.
    before = node.tree()
    again = node.run_script("bin/update-head.sh")
    assert again.returncode == 0, again.output
    assert [c for c in again.calls if c.startswith((*CHANGING_CALLS, "scontrol reconfigure"))] == []
    assert node.tree() == before


def test_a_reconfigurable_change_reconfigures_without_a_restart(tmp_path: Path) -> None:
    node, _ = _booted_head(tmp_path)
    second = _publish(node, node.cfg, "second.tar.gz", debug=True)
    run = node.run_script("bin/update-head.sh")
    assert run.returncode == 0, run.output
    assert "SlurmctldDebug=debug" in _slurm_conf(node)
    assert len(run.called("scontrol reconfigure")) == 1
    assert [c for c in run.calls if "slurmctld" in c and c.startswith("systemctl")] == []
    assert (node.root / NODE_LAYOUT.applied_bundle.lstrip("/")).read_text() == second + "\n"


def test_an_update_keeps_the_topology_the_agent_wrote(tmp_path: Path) -> None:
    """The bundle's topology.conf only seeds the file: the topology timer's tree survives a
    new bundle, which would otherwise put every node back in no switch."""
    node, _ = _booted_head(tmp_path)
    topology = node.root / "etc/slurm/topology.conf"
    assert "SwitchName=ec2 Switches=flat\n" in topology.read_text()
    written = "SwitchName=ec2 Switches=nn-1\nSwitchName=nn-1 Nodes=gpu-i-0a1b2c3d4e5f60001\n"
    topology.write_text(written)
    _publish(node, node.cfg, "second.tar.gz", debug=True)
    run = node.run_script("bin/update-head.sh")
    assert run.returncode == 0, run.output
    assert "SlurmctldDebug=debug" in _slurm_conf(node)
    assert topology.read_text() == written


def test_a_bundle_with_the_wrong_checksum_changes_nothing(tmp_path: Path) -> None:
    node, first = _booted_head(tmp_path)
    before = node.tree()
    _publish(node, _resized(1), "second.tar.gz", tamper=True)
    run = node.run_script("bin/update-head.sh")
    assert run.returncode != 0
    assert "does not have sha256" in run.output and "nothing was changed" in run.output
    assert run.called("scontrol reconfigure") == []
    after = {k: v for k, v in node.tree().items() if ".next" not in k}
    assert after == before
    assert (node.root / NODE_LAYOUT.applied_bundle.lstrip("/")).read_text() == first + "\n"


def test_a_failed_reconfigure_is_loud_and_retried_on_the_next_run(tmp_path: Path) -> None:
    node, first = _booted_head(tmp_path)
    second = _publish(node, node.cfg, "second.tar.gz", debug=True)
    node.env["SIM_RECONFIGURE_FAILS"] = "1"
    run = node.run_script("bin/update-head.sh")
    assert run.returncode != 0
    assert "'scontrol reconfigure' failed" in run.output
    assert len(run.called("scontrol reconfigure")) == 3
    assert (node.root / NODE_LAYOUT.applied_bundle.lstrip("/")).read_text() == first + "\n"
    del node.env["SIM_RECONFIGURE_FAILS"]
    retried = node.run_script("bin/update-head.sh")
    assert retried.returncode == 0, retried.output
    # The files were installed by the failed run; the retry still applies them.
    assert "installed files it did not apply" in retried.output
    assert len(retried.called("scontrol reconfigure")) == 1
    assert (node.root / NODE_LAYOUT.applied_bundle.lstrip("/")).read_text() == second + "\n"


def test_a_malformed_pointer_is_named(tmp_path: Path) -> None:
    node, _ = _booted_head(tmp_path)
    (node.state / "bundle-pointer").write_text("None\n")
    run = node.run_script("bin/update-head.sh")
    assert run.returncode != 0
    assert "holds 'None', not '<sha256> s3://...'" in run.output


def test_a_head_booted_before_the_stack_owned_its_image_record_writes_it_on_update(tmp_path: Path) -> None:
    from gpucluster import names

    node, _ = _booted_head(tmp_path)
    puts = node.state / "put-parameters"
    assert len(puts.read_text().splitlines()) == 1  # the bootstrap's
    # An older bundle kept its marker under another name: this head has not written the record.
    (node.root / "var/lib/gpucluster/head-booted-image.json").unlink()
    _publish(node, _resized(1), "second.tar.gz")
    run = node.run_script("bin/update-head.sh")
    assert run.returncode == 0, run.output
    first, second = puts.read_text().splitlines()
    assert second == first and f"--name {names.head_image_parameter(node.cfg)} " in second
    assert run.output.index("step record_head_image") < run.output.index("step record_applied")
    # A head that has written it makes no call on the next update.
    _publish(node, _resized(2), "third.tar.gz")
    again = node.run_script("bin/update-head.sh")
    assert again.returncode == 0, again.output
    assert len(puts.read_text().splitlines()) == 2

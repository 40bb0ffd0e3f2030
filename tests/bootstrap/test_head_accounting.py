"""The head's accounting steps (lib/accounting.sh) against stubs: slurmdbd's files private and
the database's password only on the head's disk, slurmdbd before slurmctld, the cluster
registered once, a fresh slurmctld restarted once so its state is saved, the accounts agent
run; nothing of it on a cluster without accounting. The real-Slurm suite runs the daemons."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from gpucluster import rds_ca
from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.userdata import bundle_archive
from gpucluster.config import ClusterConfig
from gpucluster.resolved import resolve
from tests.bootstrap_runs import example
from tests.shell_harness import DB_HOST, DB_PASSWORD, Node


def test_head_runs_slurmdbd_with_credentials_from_the_secret_and_is_idempotent(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False)
    first = node.run("head")
    assert first.returncode == 0, first.output
    conf = node.root / "etc/slurm/slurmdbd.conf"
    storage = node.root / "etc/slurm/slurmdbd-storage.conf"
    for private in (conf, storage):
        assert stat.S_IMODE(private.stat().st_mode) == 0o600, private
    assert f"chown slurm:slurm {conf}" in first.calls and f"chown slurm:slurm {storage}" in first.calls
    assert storage.read_text().splitlines() == [
        f"StorageHost={DB_HOST}",
        "StoragePort=3306",
        "StorageUser=slurm",
        f"StoragePass={DB_PASSWORD}",
    ]
    assert "Include /etc/slurm/slurmdbd-storage.conf" in conf.read_text().splitlines()
    # TLS to RDS: slurmdbd checks the server against RDS's CA bundle, the vendored one from the
    # bootstrap bundle (no download), world-readable like any CA file, owned by root.
    assert "StorageParameters=SSL_CA=/etc/slurm/rds-global-bundle.pem" in conf.read_text().splitlines()
    ca = node.root / "etc/slurm/rds-global-bundle.pem"
    assert hashlib.sha256(ca.read_bytes()).hexdigest() == rds_ca.RDS_CA_BUNDLE_SHA256
    assert stat.S_IMODE(ca.stat().st_mode) == 0o644
    assert f"chown root:root {ca}" in first.calls
    assert not [call for call in first.called("curl") if "rds" in call]
    assert DB_PASSWORD not in first.output
    assert not [name for name, text in node.files.items() if DB_PASSWORD in text]
    assert (
        "AccountingStorageType=accounting_storage/slurmdbd"
        in (node.root / "etc/slurm/slurm.conf").read_text()
    )
    assert (
        first.index("systemctl start slurmdbd")
        < first.index("sacctmgr -i add cluster mixed")
        < first.index("systemctl start slurmctld")
        < first.index("systemctl restart slurmctld")
        < first.index("sacctmgr -i add qos train")
    )
    assert first.called("sacctmgr -i add account research cluster=mixed")

    before = node.tree()
    second = node.run("head")
    assert second.returncode == 0, second.output
    assert node.tree() == before
    for again in ("sacctmgr -i add cluster", "systemctl restart slurmctld", "systemctl restart slurmdbd"):
        assert not second.called(again), again


def test_a_ca_bundle_that_is_not_the_pinned_one_stops_the_boot_before_slurmdbd(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False)
    shipped = node.bundle / rds_ca.BUNDLE_PATH
    shipped.write_text(shipped.read_text().replace("MII", "MIJ", 1))
    run = node.run("head")
    assert run.returncode != 0
    assert f"does not have the pinned sha256 {rds_ca.RDS_CA_BUNDLE_SHA256}" in run.output
    assert not (node.root / "etc/slurm/rds-global-bundle.pem").exists()
    assert not run.called("systemctl start slurmdbd")


def test_a_changed_ca_bundle_replaces_the_installed_one_and_restarts_slurmdbd(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False)
    assert node.run("head").returncode == 0
    installed = node.root / "etc/slurm/rds-global-bundle.pem"
    installed.write_text("an older bundle\n")
    run = node.run("head")
    assert run.returncode == 0, run.output
    assert hashlib.sha256(installed.read_bytes()).hexdigest() == rds_ca.RDS_CA_BUNDLE_SHA256
    assert run.called("systemctl restart slurmdbd")
    assert not list(installed.parent.glob("rds-global-bundle.pem.*")), "no temporary file is left"


def test_a_slurmdbd_that_does_not_answer_stops_the_boot_saying_where_to_look(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False, env={"SIM_SLURMDBD_DOWN": "1"})
    run = node.run("head")
    assert run.returncode != 0
    assert "slurmdbd does not answer" in run.output and "slurmdbd.log" in run.output
    assert not run.called("systemctl start slurmctld")


def test_a_cluster_without_accounting_runs_none_of_it(tmp_path: Path) -> None:
    node = Node(tmp_path, example("default"), gpus=0, efa=0, nvme_mounted=False)
    run = node.run("head")
    assert run.returncode == 0, run.output
    assert not run.called("sacctmgr") and not run.called("systemctl start slurmdbd")
    assert not (node.root / "etc/slurm/slurmdbd.conf").exists()


def _publish(node: Node, cfg) -> None:
    """cfg's bundle where the s3 stub serves it, named by the SSM pointer stub."""
    archive = bundle_archive(bundle_files(resolve(cfg), node.site))
    (node.fixtures / "next.tar.gz").write_bytes(archive)
    (node.state / "bundle-pointer").write_text(
        f"{hashlib.sha256(archive).hexdigest()} s3://cdk-assets/next.tar.gz\n"
    )


def _with_account(cfg, name: str, user: str):
    raw = cfg.model_dump(mode="json")
    raw["accounting"]["accounts"].append({"name": name, "users": [user]})
    return ClusterConfig.model_validate(raw)


def test_a_bundle_update_applies_new_accounts_with_the_agent(tmp_path: Path) -> None:
    node = Node(tmp_path, example("mixed"), gpus=0, efa=0, nvme_mounted=False)
    assert node.run("head").returncode == 0
    _publish(node, _with_account(node.cfg, "interns", "dave"))
    run = node.run_script("bin/update-head.sh")
    assert run.returncode == 0, run.output
    assert run.called("sacctmgr -i add account interns cluster=mixed")
    assert run.called("sacctmgr -i add user dave account=interns cluster=mixed")
    assert not run.called("systemctl restart slurmdbd"), "slurmdbd.conf did not change"


def test_accounting_turned_on_later_asks_for_the_heads_bootstrap_and_installs_nothing(tmp_path: Path) -> None:
    default = example("default")
    node = Node(tmp_path, default, gpus=0, efa=0, nvme_mounted=False)
    assert node.run("head").returncode == 0
    slurm_conf = (node.root / "etc/slurm/slurm.conf").read_text()
    raw = default.model_dump(mode="json")
    raw["accounting"] = example("mixed").model_dump(mode="json")["accounting"]
    _publish(node, ClusterConfig.model_validate(raw))
    run = node.run_script("bin/update-head.sh")
    assert run.returncode != 0
    assert "run its bootstrap once" in run.output
    assert (node.root / "etc/slurm/slurm.conf").read_text() == slurm_conf

"""The head's REST API steps (lib/rest_api.sh) against stubs: the JWT key written from its
secret, private to SlurmUser and never printed, before slurmdbd and slurmctld start; slurmrestd
from its rendered unit as its own user on the head's private address, checked with a token;
nothing of it without rest_api, and all of it removed when rest_api is turned off. The
real-Slurm suite runs slurmrestd from the same unit (tests/integration/test_rest_api.py)."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.userdata import bundle_archive
from gpucluster.config import ClusterConfig
from gpucluster.resolved import resolve
from tests.bootstrap_runs import example
from tests.shell_harness import JWT_KEY, JWT_SECRET_ARN, LOCAL_IPV4, Node

KEY = "etc/slurm/jwt_hs256.key"
UNIT = "etc/systemd/system/slurmrestd.service"
ADDRESS = "etc/slurm/slurmrestd.address"


def head(tmp_path: Path, cfg: ClusterConfig, **env: str) -> Node:
    return Node(tmp_path, cfg, gpus=0, efa=0, nvme_mounted=False, env=env)


def without_rest_api(cfg: ClusterConfig) -> ClusterConfig:
    return ClusterConfig.model_validate({**cfg.model_dump(mode="json"), "rest_api": None})


def publish(node: Node, cfg: ClusterConfig) -> None:
    """cfg's bundle where the s3 stub serves it, named by the SSM pointer stub."""
    archive = bundle_archive(bundle_files(resolve(cfg), node.site))
    (node.fixtures / "next.tar.gz").write_bytes(archive)
    (node.state / "bundle-pointer").write_text(
        f"{hashlib.sha256(archive).hexdigest()} s3://cdk-assets/next.tar.gz\n"
    )


def test_head_writes_the_jwt_key_privately_and_runs_slurmrestd_from_its_unit(tmp_path: Path) -> None:
    node = head(tmp_path, example("mixed"))
    first = node.run("head")
    assert first.returncode == 0, first.output
    key = node.root / KEY
    assert key.read_text() == JWT_KEY, "the secret's text, without the CLI's line break"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert first.called(f"chown slurm:slurm {node.root}/etc/slurm/jwt_hs256.key")
    assert JWT_KEY not in first.output
    assert not [name for name, text in node.files.items() if JWT_KEY in text]
    assert (node.root / ADDRESS).read_text() == f"SLURMRESTD_ADDRESS={LOCAL_IPV4}\n"
    assert (node.root / UNIT).read_text() == node.files["files/head/etc/systemd/system/slurmrestd.service"]
    assert "slurmrestd" in (node.state / "users").read_text().split()
    jwt_arn = JWT_SECRET_ARN.format(region="us-east-2", name="mixed")
    # The key is there before the daemons that load it start; slurmrestd after slurmctld answers.
    assert (
        first.index(f"aws --region us-east-2 secretsmanager get-secret-value --secret-id {jwt_arn}")
        < first.index("systemctl start slurmdbd")
        < first.index("systemctl start slurmctld")
        < first.index("systemctl start slurmrestd")
        < first.index("scontrol token username=slurmrestd lifespan=60")
    )
    # The token goes to curl in a header file, never on a command line.
    assert not [call for call in first.calls if "stubtoken" in call]
    assert first.called("curl -fsS -o /dev/null --max-time 5 -H @")

    before = node.tree()
    second = node.run("head")
    assert second.returncode == 0, second.output
    assert node.tree() == before
    for again in ("systemctl restart slurmrestd", "systemctl restart slurmctld", "useradd"):
        assert not second.called(again), again


def test_a_slurmrestd_that_does_not_answer_stops_the_boot_saying_where_to_look(tmp_path: Path) -> None:
    node = head(tmp_path, example("mixed"), SIM_RESTD_DOWN="1")
    run = node.run("head")
    assert run.returncode != 0
    assert "slurmrestd does not answer" in run.output and "journalctl -u slurmrestd" in run.output


def test_a_key_too_short_is_refused_before_any_daemon_starts(tmp_path: Path) -> None:
    node = head(tmp_path, example("mixed"))
    node.jwt_secret_file.write_text("short")
    run = node.run("head")
    assert run.returncode != 0
    assert "too short a JWT signing key" in run.output
    assert not run.called("systemctl start slurmctld") and not (node.root / KEY).exists()


def test_a_cluster_without_rest_api_runs_none_of_it(tmp_path: Path) -> None:
    node = head(tmp_path, without_rest_api(example("mixed")))
    run = node.run("head")
    assert run.returncode == 0, run.output
    assert not run.called(
        "aws --region us-east-2 ssm get-parameter --name /gpucluster/mixed/storage/rest_api"
    )
    assert not run.called("systemctl start slurmrestd") and not run.called("scontrol token")
    assert not (node.root / KEY).exists() and not (node.root / UNIT).exists()
    assert "AuthAltTypes" not in (node.root / "etc/slurm/slurm.conf").read_text()


def test_an_update_turns_the_rest_api_on_and_off_in_place(tmp_path: Path) -> None:
    mixed = example("mixed")
    node = head(tmp_path, without_rest_api(mixed))
    assert node.run("head").returncode == 0
    publish(node, mixed)
    on = node.run_script("bin/update-head.sh")
    assert on.returncode == 0, on.output
    assert (node.root / KEY).read_text() == JWT_KEY
    # AuthAltTypes is a restart key: slurmctld restarts with the key already in place.
    assert on.index("aws --region us-east-2 secretsmanager") < on.index("systemctl restart slurmctld")
    assert on.index("systemctl restart slurmctld") < on.index("systemctl start slurmrestd")
    assert "AuthAltTypes=auth/jwt" in (node.root / "etc/slurm/slurm.conf").read_text().splitlines()

    publish(node, without_rest_api(mixed))
    off = node.run_script("bin/update-head.sh")
    assert off.returncode == 0, off.output
    assert off.called("systemctl disable --now slurmrestd.service")
    assert not (node.root / KEY).exists() and not (node.root / UNIT).exists()
    assert "AuthAltTypes" not in (node.root / "etc/slurm/slurm.conf").read_text()

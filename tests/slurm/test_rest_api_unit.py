"""slurmrestd's rendered unit (gpucluster.slurm.rest_api) and JWT in slurm.conf: its own user,
JSON Web Tokens only, the head's private address, no relaxed security, a tight sandbox; and
auth/jwt in slurm.conf whenever rest_api is on, with or without accounting."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from gpucluster.bootstrap import rest_api
from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.config import ClusterConfig
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.rest_api import UNIT_PATH
from gpucluster.slurm.site import SlurmSite
from tests.slurm.conf_text import settings, single

HARDENING = {
    "NoNewPrivileges": "yes",
    "CapabilityBoundingSet": "",
    "AmbientCapabilities": "",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6 AF_NETLINK",
    "RestrictNamespaces": "yes",
    "SystemCallFilter": "@system-service",
    "MemoryDenyWriteExecute": "yes",
}


def with_rest_api(cfg: ClusterConfig, rest_api: dict | None, accounting: object = "keep") -> ClusterConfig:
    raw = {**cfg.model_dump(mode="json"), "rest_api": rest_api}
    if accounting != "keep":
        raw["accounting"] = accounting
    return ClusterConfig.model_validate(raw)


def unit_of(cfg: ClusterConfig) -> str:
    return bundle_files(resolve(cfg))[f"files/head{UNIT_PATH}"]


def service(unit: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    section = ""
    for line in unit.splitlines():
        if line.startswith("["):
            section = line
        elif section == "[Service]" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            found.setdefault(key, []).append(value)
    return found


@pytest.fixture
def mixed(example_configs) -> ClusterConfig:
    return example_configs["mixed"]


def test_the_unit_runs_slurmrestd_as_its_own_user_with_jwt_on_the_private_address(mixed):
    unit = service(unit_of(mixed))
    assert unit["User"] == unit["Group"] == ["slurmrestd"]
    assert unit["ExecStart"] == ["/usr/sbin/slurmrestd -a rest_auth/jwt ${SLURMRESTD_ADDRESS}:6820"]
    assert unit["EnvironmentFile"] == ["/etc/slurm/slurmrestd.address"], "required, written at boot"
    assert sorted(unit["Environment"]) == ["SLURM_CONF=/etc/slurm/slurm.conf", "SLURM_JWT=daemon"]
    # Each value of SLURMRESTD_SECURITY relaxes a protection (slurmrestd(8)).
    assert "SLURMRESTD_SECURITY" not in unit_of(mixed)


def test_the_unit_is_sandboxed(mixed):
    unit = service(unit_of(mixed))
    assert {key: unit.get(key, [None])[-1] for key in HARDENING} == HARDENING


def test_the_port_follows_the_config(mixed):
    unit = service(unit_of(with_rest_api(mixed, {"port": 7443})))
    assert unit["ExecStart"][0].endswith(":7443")


def test_no_rest_api_no_unit_and_no_jwt(example_configs):
    cfg = example_configs["default"]
    assert cfg.rest_api is None
    assert f"files/head{UNIT_PATH}" not in bundle_files(resolve(cfg))
    assert "AuthAltTypes" not in slurm_conf.render_slurm_files(resolve(cfg)).slurm_conf


def test_jwt_in_slurm_conf_without_accounting(example_configs):
    cfg = with_rest_api(example_configs["default"], {})
    conf = settings(slurm_conf.render_slurm_files(resolve(cfg)).slurm_conf)
    assert single(conf, "AuthType") == "auth/munge"
    assert single(conf, "AuthAltTypes") == "auth/jwt"
    assert single(conf, "AuthAltParameters") == "jwt_key=/etc/slurm/jwt_hs256.key"
    assert "AccountingStorageType" not in conf


def test_with_the_heads_slurmdbd_both_daemons_take_the_key(mixed):
    files = slurm_conf.render_slurm_files(resolve(mixed))
    assert files.slurmdbd_conf is not None
    for text in (files.slurm_conf, files.slurmdbd_conf):
        assert single(settings(text), "AuthAltParameters") == "jwt_key=/etc/slurm/jwt_hs256.key"


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_reads_every_directive_and_rates_the_sandbox_ok(mixed, tmp_path):
    path = tmp_path / "slurmrestd.service"
    path.write_text(unit_of(mixed))
    verify = subprocess.run(
        ["systemd-analyze", "verify", str(path)], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    # The only complaint off the head: slurmrestd is not installed here.
    complaints = [line for line in verify.stderr.splitlines() if "/usr/sbin/slurmrestd" not in line]
    assert complaints == [], verify.stderr
    security = subprocess.run(
        ["systemd-analyze", "security", "--offline=yes", str(path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    exposure = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
    assert exposure is not None, security.stdout + security.stderr
    assert float(exposure[1]) <= 2.0, security.stdout


def test_the_site_decides_where_and_as_whom(mixed, tmp_path):
    site = SlurmSite(config_dir=str(tmp_path / "etc"))
    (unit,) = rest_api.head_files(resolve(mixed), site).values()
    assert f"Environment=SLURM_CONF={tmp_path}/etc/slurm.conf" in unit.splitlines()

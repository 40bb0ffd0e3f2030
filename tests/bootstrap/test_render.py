"""Every example renders a complete bundle whose scripts pass shellcheck, and
`gpucluster render` writes it, with user-data inside its budget."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.cluster_conf import lustre_efa_interfaces
from gpucluster.bootstrap.render_files import render_to_dir
from gpucluster.bootstrap.userdata import USER_DATA_LIMIT
from gpucluster.config.loader import load_config
from gpucluster.names import LAUNCH_LIFECYCLE_HOOK
from gpucluster.resolved import resolve
from gpucluster.slurm.conf import node_local_files
from gpucluster.synth.app import rendered
from gpucluster.synth.summary import user_data_sizes
from tests.shellcheck import SHELLCHECK
from tests.slurm.conf_text import conf_line_of

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))


@pytest.fixture(params=EXAMPLES, ids=lambda path: path.stem)
def cfg(request):
    return load_config(request.param)


def test_bundle_has_every_role_and_group(cfg) -> None:
    files = bundle_files(resolve(cfg))
    assert "bin/bootstrap.sh" in files and "conf/cluster.sh" in files
    assert "files/head/etc/slurm/slurm.conf" in files
    assert "files/login/etc/enroot/enroot.conf" in files
    for path in node_local_files(resolve(cfg)):
        assert f"files/login{path}" in files
        assert all(f"files/compute-{group.name}{path}" in files for group in cfg.compute_groups)
    for group in cfg.compute_groups:
        tree = f"files/compute-{group.name}"
        assert f"{tree}/usr/local/sbin/gpucluster-healthcheck" in files
        assert f"{tree}/etc/enroot/enroot.conf" in files
        assert f'SLURMD_CONF="{conf_line_of(cfg, group)}"' in files["conf/cluster.sh"]
        lustre_efa = lustre_efa_interfaces(resolve(cfg), resolve(cfg).group(group.name))
        assert f"LUSTRE_EFA_INTERFACES={lustre_efa}" in files["conf/cluster.sh"]


def test_versions_and_checksums_come_from_the_config(cfg) -> None:
    conf = bundle_files(resolve(cfg))["conf/cluster.sh"]
    software = cfg.software
    for value in (
        software.slurm,
        software.enroot_sha256,
        software.enroot_caps_sha256,
        software.pyxis_sha256,
        f"v{software.enroot_version}/",
        f"v{software.pyxis_version}.tar.gz",
        LAUNCH_LIFECYCLE_HOOK,
    ):
        assert value in conf
    static = "".join(text for name, text in bundle_files(resolve(cfg)).items() if name.startswith("lib/"))
    for value in (software.enroot_version, software.pyxis_version, software.enroot_sha256):
        assert value not in static


def test_rendered_scripts_pass_shellcheck(cfg, tmp_path: Path) -> None:
    render_to_dir(cfg, tmp_path)
    bundle = tmp_path / "bundle"
    scripts = sorted(
        str(path.relative_to(bundle))
        for path in bundle.rglob("*")
        if path.is_file() and (path.name.endswith(".sh") or path.read_text().startswith("#!"))
    ) + [str(path) for path in sorted((tmp_path / "user-data").iterdir())]
    assert "bin/bootstrap.sh" in scripts and "conf/cluster.sh" in scripts
    assert any(name.startswith("lib/") for name in scripts)
    assert any(name.endswith("gpucluster-healthcheck") for name in scripts)
    result = subprocess.run(
        [str(SHELLCHECK), "-x", "--source-path=SCRIPTDIR", "--severity=style", *scripts],
        cwd=bundle,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_render_writes_bundle_and_user_data(cfg, tmp_path: Path) -> None:
    written = render_to_dir(cfg, tmp_path)
    names = {str(path.relative_to(tmp_path)) for path in written}
    assert names >= {f"bundle/{name}" for name in bundle_files(resolve(cfg))}
    targets = {"head", "login", *(f"compute-{group.name}" for group in cfg.compute_groups)}
    assert {f"user-data/{target}.sh" for target in targets} <= names
    compute = (tmp_path / "user-data" / f"compute-{cfg.compute_groups[0].name}.sh").read_text()
    assert f"--role compute --group {cfg.compute_groups[0].name}" in compute
    assert "s3://<cdk-assets-bucket>/" in compute


def test_user_data_stays_within_budget(cfg) -> None:
    sizes = user_data_sizes(rendered(cfg)[1], cfg.account, cfg.region)
    assert set(sizes) == {"head", "login", *(f"compute/{g.name}" for g in cfg.compute_groups)}
    for target, size in sizes.items():
        assert 0 < size <= USER_DATA_LIMIT, f"{target}: {size} bytes"

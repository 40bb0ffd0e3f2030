"""srun and sbatch on the head node's side, with the plugstack.conf the head installs:
Pyxis `required`, the real plugin built from source against this host's Slurm.

The head node runs Slurm client commands (users and the agents), and its
plugstack.conf marks spank_pyxis.so required; a client that cannot load a required
plugin refuses to submit. So the head builds Pyxis like login and compute nodes do.
Here the client reads a copy of the cluster's configuration that
differs only in its plugstack (SlurmSite.pyxis_*) and submits to the real slurmctld."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from tests.integration.cluster import SlurmCluster
from tests.integration.installs import SlurmInstall
from tests.integration.prerequisites import unavailable

pytestmark = pytest.mark.slurm

VENDOR = Path(__file__).resolve().parent / "vendor"
PYXIS_TARBALL = "pyxis-0.24.0.tar.gz"
# Built once per source and Slurm release, kept between sessions: a build takes seconds,
# but the suite runs often. The directory is this test's own.
CACHE = Path("/var/tmp/gpucluster-test-pyxis")
JOB_TIMEOUT = 30


def _expected_sha256(name: str) -> str:
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, _, file = line.partition("  ")
        if file == name:
            return digest
    raise AssertionError(f"{name} is not listed in {VENDOR / 'SHA256SUMS'}")


def _build_requirements(install: SlurmInstall) -> str | None:
    """What the install lacks to build Pyxis against its own Slurm headers."""
    if install.root is None:
        for tool in ("gcc", "make", "strip"):
            if shutil.which(tool) is None:
                return f"{tool} is missing (apt-get install gcc libc6-dev make binutils)"
    root = install.root or Path("/")
    if not (root / "usr" / "include" / "slurm" / "spank.h").exists():
        return f"{root / 'usr/include/slurm/spank.h'} is missing (apt-get install libslurm-dev)"
    return None


@pytest.fixture(scope="session")
def pyxis_library(slurm_cluster: SlurmCluster) -> Path:
    """spank_pyxis.so built from the vendored source, with the commands build_pyxis runs,
    inside the session's Slurm install (against its headers)."""
    install = slurm_cluster.install
    tarball = VENDOR / PYXIS_TARBALL
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert digest == _expected_sha256(PYXIS_TARBALL), f"{tarball} is not the vendored release"
    missing = _build_requirements(install)
    if missing is not None:
        unavailable(f"cannot build Pyxis: {missing}")
    build = CACHE / f"{digest[:16]}-slurm-{install.release()}"
    library = build / "root" / "usr" / "local" / "lib" / "slurm" / "spank_pyxis.so"
    if library.is_file():
        return library
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(build, filter="data")
    source = build / PYXIS_TARBALL.removesuffix(".tar.gz")
    for command in (
        ["make", "-C", str(source), f"-j{os.cpu_count() or 1}"],
        ["make", "-C", str(source), "install", f"DESTDIR={build / 'root'}"],
    ):
        done = subprocess.run(
            install.command(command), capture_output=True, text=True, timeout=300, check=False
        )
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"
    assert library.is_file(), f"Pyxis built but {library} is missing"
    return library


def _head_side(cluster: SlurmCluster, library: Path, name: str) -> dict[str, str]:
    """The head's client configuration (Pyxis required at `library`); returns its env."""
    site: SlurmSite = dataclasses.replace(
        cluster.site,
        config_dir=str(cluster.root / name),
        pyxis_required=True,
        pyxis_library=str(library),
        pyxis_runtime_path=str(cluster.root / "pyxis-run"),
    )
    files = slurm_conf.render_slurm_files(cluster.cfg, site).by_path(site)
    pyxis_conf = f"{slurm_conf.plugstack_dir(site)}/pyxis.conf"
    assert files[pyxis_conf].startswith(f"required {library} ")
    for path, text in files.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return {"PATH": os.environ["PATH"], "SLURM_CONF": f"{site.config_dir}/slurm.conf"}


def test_head_submits_with_pyxis_required(cluster: SlurmCluster, pyxis_library: Path):
    env = _head_side(cluster, pyxis_library, "head-etc")
    # The client loaded the plugin: its options are srun's.
    assert "--container-image" in cluster.slurm("srun", "--help", env=env).stdout

    jobs = cluster.root / "jobs"
    submitted = cluster.slurm(
        "sbatch", "--parsable", f"--chdir={jobs}", "--output=/dev/null", "--wrap", "hostname", env=env
    )
    job = submitted.stdout.strip().split(";")[0]
    assert cluster.wait_job_state(job, {"COMPLETED"}, JOB_TIMEOUT)

    # The namespaces share the host's UTS name, so each task names its Slurm node.
    step = cluster.slurm(
        "srun",
        f"--chdir={jobs}",
        "--nodes=2",
        "--ntasks-per-node=1",
        "bash",
        "-c",
        'echo "$SLURMD_NODENAME"',
        env=env,
        timeout=60,
    )
    assert sorted(step.stdout.split()) == sorted(cluster.nodes)


def test_head_without_the_plugin_cannot_submit(cluster: SlurmCluster):
    """What the head did before it built Pyxis: the required plugin is missing."""
    env = _head_side(cluster, cluster.root / "absent" / "spank_pyxis.so", "head-etc-missing")
    refused = cluster.slurm(
        "sbatch",
        f"--chdir={cluster.root / 'jobs'}",
        "--output=/dev/null",
        "--wrap",
        "hostname",
        env=env,
        check=False,
    )
    assert refused.returncode != 0
    # Seen on 22.05.8: "sbatch: error: Failed to initialize plugin stack".
    assert "plugin stack" in refused.stderr, refused.stderr

"""srun and sbatch on the head node's side, with the plugstack.conf the head installs:
Pyxis `required`, the real plugin built from source against the install's Slurm (each install
of the suite: installs.py).

The head node runs Slurm client commands (users and the agents), and its
plugstack.conf marks spank_pyxis.so required; a client that cannot load a required
plugin refuses to submit. So the head builds Pyxis like login and compute nodes do.
Here the client reads a copy of the cluster's configuration that
differs only in where it loads Pyxis from (SlurmSite.pyxis_library) and submits to the
real slurmctld. The build is vendor_builds.pyxis_library, shared with the cluster."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.conf import SlurmSite
from tests.integration.cluster import SlurmCluster

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 30


def _head_side(cluster: SlurmCluster, library: Path, name: str) -> dict[str, str]:
    """The head's client configuration (Pyxis required at `library`); returns its env."""
    site: SlurmSite = dataclasses.replace(
        cluster.site,
        config_dir=str(cluster.root / name),
        pyxis_library=str(library),
    )
    files = slurm_conf.render_slurm_files(resolve(cluster.cfg), site).by_path(site)
    pyxis_conf = f"{slurm_conf.plugstack_dir(site)}/pyxis.conf"
    assert any(line.startswith(f"required {library} ") for line in files[pyxis_conf].splitlines())
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

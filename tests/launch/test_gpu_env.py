"""One environment for every GPU job: the file a compute node keeps per group, what it sets,
and that the nccl validation jobs and the torchrun job can only run NCCL inside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.container.dockerfile import render_dockerfile
from gpucluster.jobs.validation import job_path
from gpucluster.launch.gpu_env import (
    LIBRARY_DIRS,
    NCCL_NET_NAME,
    NCCL_NET_PLUGIN,
    gpu_env_path,
    render_gpu_env,
)
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from tests.jobs.rendered import job_of, torchrun_of
from tests.shellcheck import assert_shellcheck_clean

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
NCCL_JOBS = ("nccl-tests", "nccl-pairwise")
# What only the environment file may set: a job setting one of these itself would run NCCL in
# another environment than the one the gate validated.
NETWORK_VARIABLES = re.compile(r"\b(?:export\s+|-x\s+)?(NCCL_NET\w*|FI_\w+|NCCL_SOCKET_IFNAME|NCCL_IB_\w+)=")


@pytest.fixture(params=EXAMPLES, ids=lambda path: path.stem)
def cfg(request: pytest.FixtureRequest) -> ClusterConfig:
    return load_config(request.param)


def sourced(text: str, tmp_path: Path, *names: str) -> dict[str, str]:
    """The variables `names` after sourcing `text` under set -euo pipefail, as the jobs do."""
    env_file = tmp_path / "gpu-env.sh"
    env_file.write_text(text)
    shown = "; ".join(f'printf "%s=%s\\n" {name} "${{{name}-<unset>}}"' for name in names)
    result = subprocess.run(
        ["bash", "-c", f'set -euo pipefail; source "$0"; {shown}', str(env_file)],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": "/usr/local/cuda/lib64"},
    )
    return dict(line.split("=", 1) for line in result.stdout.splitlines())


def test_an_efa_group_forces_the_ofi_plugin_and_the_efa_provider(tmp_path: Path) -> None:
    resolved = resolve(load_config(REPO / "examples" / "default.yaml"))
    values = sourced(
        render_gpu_env(resolved, resolved.groups[0]),
        tmp_path,
        "NCCL_NET",
        "NCCL_NET_PLUGIN",
        "FI_PROVIDER",
        "LD_LIBRARY_PATH",
        "PATH",
    )
    assert values["NCCL_NET"] == NCCL_NET_NAME == "AWS Libfabric"
    assert values["NCCL_NET_PLUGIN"] == NCCL_NET_PLUGIN == "ofi"
    assert values["FI_PROVIDER"] == "efa"
    # Prepended: the plugin wins over any other libnccl-net on the path; what was there stays.
    assert values["LD_LIBRARY_PATH"] == ":".join(LIBRARY_DIRS) + ":/usr/local/cuda/lib64"
    assert values["PATH"].startswith("/opt/amazon/efa/bin:")


def test_a_group_without_efa_lets_nccl_choose_its_network(tmp_path: Path) -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    group = cfg.compute_groups[0].model_copy(update={"efa": False})
    resolved = resolve(cfg.model_copy(update={"compute_groups": [group]}))
    values = sourced(
        render_gpu_env(resolved, resolved.groups[0]), tmp_path, "NCCL_NET", "FI_PROVIDER", "NCCL_NET_PLUGIN"
    )
    assert values["NCCL_NET"] == "<unset>" and values["FI_PROVIDER"] == "<unset>"
    assert values["NCCL_NET_PLUGIN"] == "ofi"


def test_every_group_keeps_its_own_file_where_every_gpu_job_sources_it(cfg: ClusterConfig) -> None:
    bundle = bundle_files(resolve(cfg))
    path = gpu_env_path()
    assert path == f"{NODE_LAYOUT.lib_dir}/gpu-env.sh"
    assert f'"{path}"' in bundle["conf/cluster.sh"]
    for group in cfg.compute_groups:
        assert bundle[f"files/compute-{group.name}{path}"] == render_gpu_env(
            resolve(cfg), resolve(cfg).group(group.name)
        )
        for job in (*NCCL_JOBS, "torchrun"):
            script = torchrun_of(cfg, group) if job == "torchrun" else job_of(cfg, group, job)
            assert f'readonly GPU_ENV="{path}"' in script, job
    # Login nodes run no GPU process.
    assert not any(name.startswith("files/login") and name.endswith(path) for name in bundle)


def test_no_job_sets_the_network_itself(cfg: ClusterConfig) -> None:
    for group in cfg.compute_groups:
        for job in (*NCCL_JOBS, "torchrun", "efa-check", "dcgm-diag"):
            script = torchrun_of(cfg, group) if job == "torchrun" else job_of(cfg, group, job)
            code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
            assert not NETWORK_VARIABLES.findall(code), (job, NETWORK_VARIABLES.findall(code))
            assert "/opt/amazon/ofi-nccl" not in code, job


def test_every_nccl_launch_runs_inside_the_file(cfg: ClusterConfig) -> None:
    """nccl-tests start through mpirun (host) or srun (container); either way the binary is
    what GPU_ENV_RUN execs after sourcing the file, and a container gets the file mounted."""
    for group in cfg.compute_groups:
        for job in NCCL_JOBS:
            script = job_of(cfg, group, job)
            launches = re.findall(r"^\s+\"\$\{GPU_ENV_RUN\[@\]\}\" \"\$\{binary\}\"", script, re.MULTILINE)
            assert len(launches) == 2, job
            assert re.search(r'"\$\{binary\}"', script.split("GPU_ENV_RUN=")[0]) is None
            assert "${NODE_LIB_DIR}:${NODE_LIB_DIR}:ro" in script
        torchrun = torchrun_of(cfg, group)
        body = torchrun.split("launch_node() {", 1)[1].split("\n}\n", 1)[0]
        # The file is sourced before torchrun starts, on every node, in the container too.
        assert body.index('source "${GPU_ENV}"') < body.index('exec "${TORCHRUN}"')
        assert '"${NODE_LIB_DIR}:${NODE_LIB_DIR}:ro"' in torchrun


def test_the_training_image_agrees_with_the_file(cfg: ClusterConfig) -> None:
    """Outside the jobs (docker run, an interactive srun) the image's own ENV is the same."""
    dockerfile = render_dockerfile(cfg)
    assert f'LD_LIBRARY_PATH="{":".join(LIBRARY_DIRS)}:${{LD_LIBRARY_PATH}}"' in dockerfile
    assert f"NCCL_NET_PLUGIN={NCCL_NET_PLUGIN}" in dockerfile


def test_the_file_passes_shellcheck(cfg: ClusterConfig, tmp_path: Path) -> None:
    resolved = resolve(cfg)
    files = {f"/{group.name}/gpu-env.sh": render_gpu_env(resolved, group) for group in resolved.groups}
    assert_shellcheck_clean(files, tmp_path)


def test_the_jobs_name_the_node_files_of_the_suite_when_told(tmp_path: Path) -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    group = cfg.compute_groups[0]
    lib_dir = str(tmp_path / "lib")
    assert f'readonly GPU_ENV="{lib_dir}/gpu-env.sh"' in job_of(cfg, group, "nccl-tests", lib_dir)
    assert f'readonly GPU_ENV="{lib_dir}/gpu-env.sh"' in torchrun_of(cfg, group, lib_dir)
    assert job_path(group.name, "torchrun").endswith("/torchrun.sbatch")

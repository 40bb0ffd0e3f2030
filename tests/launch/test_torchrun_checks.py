"""What the torchrun job checks on each node before torchrun starts: that NCCL will reach EFA on a
multi-node run of an EFA group (else a named failure, not a silent TCP fallback), and that the
reference trainer runs from the files a compute node keeps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.config.loader import load_config
from gpucluster.launch.gpu_env import PLUGIN_FILE
from gpucluster.launch.node_lib import node_lib_files, trainer_dir, trainer_sources
from gpucluster.resolved import resolve
from tests.jobs.rendered import torchrun_of

REPO = Path(__file__).resolve().parents[2]


def run_check(
    tmp_path: Path, *, nodes: int, gpus: bool, plugin: bool, efa_device: bool
) -> subprocess.CompletedProcess[str]:
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = torchrun_of(cfg, cfg.compute_groups[0], str(tmp_path / "lib"))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "fi_info").write_text(f"#!/bin/bash\nexit {0 if efa_device else 1}\n")
    (bin_dir / "fi_info").chmod(0o755)
    devices = tmp_path / "dev"
    devices.mkdir()
    if gpus:
        (devices / "nvidia0").touch()
    plugin_dir = tmp_path / "ofi-nccl" / "lib"
    plugin_dir.mkdir(parents=True)
    if plugin:
        (plugin_dir / PLUGIN_FILE).write_text("")
    return subprocess.run(
        [
            "bash",
            "-c",
            f'source /dev/stdin <<<"$0"; GPU_DEVICES="{devices}/nvidia[0-9]*"; check_nccl_network node-a',
            script,
        ],
        capture_output=True,
        text=True,
        check=False,
        env={
            "PATH": f"{bin_dir}:/usr/bin:/bin",
            "SLURM_NNODES": str(nodes),
            "LD_LIBRARY_PATH": f"/nowhere:{plugin_dir}",
            "NCCL_NET": "AWS Libfabric",
        },
    )


def test_a_multi_node_gpu_run_with_the_plugin_and_efa_goes_ahead(tmp_path: Path) -> None:
    result = run_check(tmp_path, nodes=2, gpus=True, plugin=True, efa_device=True)
    assert result.returncode == 0, result.stdout
    assert f"node-a: NCCL uses EFA: {tmp_path}/ofi-nccl/lib/{PLUGIN_FILE}" in result.stdout


def test_without_the_plugin_the_job_stops_and_says_how_to_get_it(tmp_path: Path) -> None:
    result = run_check(tmp_path, nodes=2, gpus=True, plugin=False, efa_device=True)
    assert result.returncode == 1
    assert (
        f"FAILED: node-a: NCCL's EFA plugin {PLUGIN_FILE} (aws-ofi-nccl) is in no LD_LIBRARY_PATH"
        in result.stdout
    )
    assert "gpucluster container render" in result.stdout


def test_without_an_efa_device_the_job_stops_and_names_the_node_to_drain(tmp_path: Path) -> None:
    result = run_check(tmp_path, nodes=2, gpus=True, plugin=True, efa_device=False)
    assert result.returncode == 1
    assert "FAILED: node-a: libfabric finds no EFA device (fi_info -p efa)" in result.stdout
    assert "scontrol update nodename=node-a state=drain" in result.stdout


@pytest.mark.parametrize(("nodes", "gpus"), [(1, True), (2, False)])
def test_runs_that_cross_no_network_or_use_no_nccl_are_not_held_to_efa(
    tmp_path: Path, nodes: int, gpus: bool
) -> None:
    result = run_check(tmp_path, nodes=nodes, gpus=gpus, plugin=False, efa_device=False)
    assert result.returncode == 0, result.stdout
    assert "FAILED" not in result.stdout


def test_the_reference_trainer_runs_from_the_node_files_alone(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    cfg = load_config(REPO / "examples" / "default.yaml")
    lib_dir = str(tmp_path / "lib")
    resolved = resolve(cfg)
    for path, text in node_lib_files(resolved, resolved.groups[0], lib_dir).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    assert "gpucluster/train/__main__.py" in trainer_sources()
    # The node files come first on the path, as PYTHONPATH puts them: every module the trainer
    # imports must be among them, or the import fails (the package is the node copy alone).
    # Every gpucluster module loaded must come from the node's files: the checkout's editable
    # install would otherwise supply one they lack.
    probe = (
        "import sys, gpucluster.train.__main__, gpucluster.train.loop; "
        "print('\\n'.join(m.__file__ for n, m in sys.modules.items() if n.split('.')[0] == 'gpucluster'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": trainer_dir(lib_dir), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert all(line.startswith(trainer_dir(lib_dir)) for line in result.stdout.split()), result.stdout
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "gpucluster.train",
            "--checkpoint-dir",
            str(tmp_path / "ckpt"),
            "--steps",
            "3",
        ],
        capture_output=True,
        text=True,
        check=False,
        env={"PYTHONPATH": trainer_dir(lib_dir), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "gpucluster-train done step=3 " in run.stdout

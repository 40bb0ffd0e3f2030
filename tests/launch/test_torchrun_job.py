"""The torchrun job renders for every group of every example beside the validation jobs, lands
on login nodes through the bundle, passes shellcheck, builds one torchrun per node from the
catalog, and hands Slurm's USR1 to the ranks and requeues (with stand-ins for srun/torchrun)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.render_files import render_to_dir
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.jobs.validation import job_path
from gpucluster.launch.node_lib import node_lib_files
from gpucluster.launch.torchrun import JOB, RENDEZVOUS_PORT, SIGNAL_SECONDS, torchrun_files
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from tests.jobs.rendered import torchrun_of
from tests.shellcheck import assert_shellcheck_clean

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
WAIT = 20


@pytest.fixture(params=EXAMPLES, ids=lambda path: path.stem)
def cfg(request: pytest.FixtureRequest) -> ClusterConfig:
    return load_config(request.param)


def directives(script: str) -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([a-z-]+)(?:=(\S+))?$", script, flags=re.MULTILINE))


def test_every_group_gets_the_job_on_login_nodes(cfg: ClusterConfig, tmp_path: Path) -> None:
    bundle = bundle_files(resolve(cfg))
    files = torchrun_files(resolve(cfg))
    assert len(files) == len(cfg.compute_groups)
    for group in cfg.compute_groups:
        path = job_path(group.name, JOB)
        assert path == f"{NODE_LAYOUT.jobs_dir}/{group.name}/torchrun.sbatch"
        assert bundle[f"files/login{path}"] == files[path] == torchrun_of(cfg, group)
        assert f'"{path}"' in bundle["conf/cluster.sh"]


def test_directives_follow_the_catalog_and_the_config(cfg: ClusterConfig) -> None:
    for group in cfg.compute_groups:
        instance = group.instance
        script = torchrun_of(cfg, group)
        found = directives(script)
        # One launcher per node holding every CPU; it starts one process per GPU itself.
        assert found["ntasks-per-node"] == "1"
        assert found["cpus-per-task"] == str(instance.vcpus)
        assert found["gpus-per-node"] == str(instance.gpu_count)
        assert found["partition"] == group.name
        assert found["export"] == "ALL"
        assert found["time"] == str(group.default_time)
        assert "requeue" in found and found["open-mode"] == "append"
        assert found["signal"] == f"B:USR1@{SIGNAL_SECONDS}"
        assert f'NPROC_PER_NODE="${{TRAIN_NPROC_PER_NODE:-{instance.gpu_count}}}"' in script
        per_rank = instance.vcpus // instance.gpu_count
        assert f'OMP_NUM_THREADS="${{OMP_NUM_THREADS:-{per_rank}}}"' in script
        assert f'RDZV_PORT="${{TRAIN_RDZV_PORT:-{RENDEZVOUS_PORT}}}"' in script
        fsx = cfg.storage.fsx_lustre
        assert f'STORAGE_ROOT="{fsx.mount_point if fsx else ""}"' in script


def test_without_fsx_checkpoints_go_to_home() -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    bare = cfg.model_copy(update={"storage": cfg.storage.model_copy(update={"fsx_lustre": None})})
    script = torchrun_of(bare, bare.compute_groups[0])
    assert 'readonly STORAGE_ROOT=""' in script
    assert "default $HOME/$USER/checkpoints/" in script


def test_job_passes_shellcheck(cfg: ClusterConfig, tmp_path: Path) -> None:
    assert_shellcheck_clean(torchrun_files(resolve(cfg)), tmp_path)


def test_render_writes_the_job_executable(tmp_path: Path) -> None:
    cfg = load_config(REPO / "examples" / "mixed.yaml")
    render_to_dir(cfg, tmp_path)
    for group in cfg.compute_groups:
        path = tmp_path / "bundle" / "files" / "login" / job_path(group.name, JOB).lstrip("/")
        assert path.read_text() == torchrun_of(cfg, group)
        assert path.stat().st_mode & 0o111


# A torchrun stand-in: records its arguments, starts one "rank" (Python, which can take over
# an ignored USR1 as the trainer does) that notes USR1 and exits 0, and waits for it. Being a
# shell started with USR1 ignored, it cannot trap USR1 itself: if USR1 reached it unignored,
# it would die and the launcher would report its exit.
FAKE_TORCHRUN = r"""#!/bin/bash
echo "$*" >"${MARKS}/args-${SLURM_PROCID}"
python3 -c '
import os, signal, sys, time
marks = os.environ["MARKS"] + "/rank-" + os.environ["SLURM_PROCID"]
def stop(*_):
    open(marks, "a").write("usr1\n")
    sys.exit(0)
signal.signal(signal.SIGUSR1, stop)
open(marks, "a").write("ready\n")
open(marks + ".pid", "w").write(str(os.getpid()))
time.sleep(60)
sys.exit(3)
' &
wait "$!"
"""

# srun stand-in: every "node" runs the last argument (the launcher) with its SLURM_PROCID;
# USR1 to srun goes on to every task, as srun forwards signals.
FAKE_SRUN = r"""#!/bin/bash
pids=()
for rank in 0 1; do
  SLURM_PROCID=${rank} SLURMD_NODENAME=node${rank} bash -c "${@: -1}" &
  pids+=($!)
done
trap 'kill -USR1 "${pids[@]}"' USR1
rc=0
for pid in "${pids[@]}"; do
  until wait "${pid}" || ! kill -0 "${pid}" 2>/dev/null; do :; done
  wait "${pid}" || rc=$?
done
exit "${rc}"
"""

FAKE_SCONTROL = r"""#!/bin/bash
case "$*" in
  "show hostnames"*) printf 'node0\nnode1\n' ;;
  "-o show node node0") echo "NodeName=node0 NodeAddr=10.1.0.10 State=ALLOCATED" ;;
  "-o show node node1") echo "NodeName=node1 NodeAddr=10.1.0.11 State=ALLOCATED" ;;
  requeue*) echo "$*" >>"${MARKS}/scontrol" ;;
  *) echo "unexpected scontrol $*" >&2; exit 1 ;;
esac
"""


FAKE_SQUEUE = r"""#!/bin/bash
[[ "$*" == "-h -j 4242 -o %l" ]] || { echo "unexpected squeue $*" >&2; exit 1; }
echo "${FAKE_LIMIT:-1:00:00}"
"""


def _tools(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (
        ("torchrun", FAKE_TORCHRUN),
        ("srun", FAKE_SRUN),
        ("scontrol", FAKE_SCONTROL),
        ("squeue", FAKE_SQUEUE),
    ):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "MARKS": str(marks),
        "HOME": str(tmp_path / "home"),
        "USER": "alice",
        "SLURM_JOB_ID": "4242",
        "SLURM_JOB_NAME": "torchrun-gpu",
        "SLURM_JOB_NODELIST": "node[0-1]",
        "SLURM_NNODES": "2",
        "SLURM_CPUS_PER_TASK": "192",
        "TRAIN_CHECKPOINT_DIR": str(tmp_path / "ckpt"),
    }
    return marks, env


def _wait_for(what: str, probe: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not probe():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def _script(tmp_path: Path) -> Path:
    """The default example's first job, with the node's files (gpu-env.sh, the trainer) under
    tmp_path/lib as a compute node keeps them under /opt/gpucluster/lib."""
    cfg = load_config(REPO / "examples" / "default.yaml")
    group = cfg.compute_groups[0]
    lib_dir = str(tmp_path / "lib")
    resolved = resolve(cfg)
    for path, text in node_lib_files(resolved, resolved.group(group.name), lib_dir).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    script = tmp_path / "torchrun.sbatch"
    script.write_text(torchrun_of(cfg, group, lib_dir))
    return script


def _start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], Path]:
    script = _script(tmp_path)
    marks, env = _tools(tmp_path)
    # The stand-in torchrun on PATH, not an environment the job builds.
    env["TRAIN_VENV"] = ""
    process = subprocess.Popen(
        ["bash", str(script), *args],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return process, marks


def _ranks_ready(marks: Path) -> bool:
    return all((marks / f"rank-{rank}.pid").exists() for rank in (0, 1))


def test_one_torchrun_per_node_with_one_rendezvous_on_the_first_node(tmp_path: Path) -> None:
    process, marks = _start(tmp_path, "train.py", "--epochs", "1")
    _wait_for("both ranks", lambda: _ranks_ready(marks))
    process.send_signal(signal.SIGUSR1)
    out, _ = process.communicate(timeout=WAIT)
    for rank, address in ((0, "10.1.0.10"), (1, "10.1.0.11")):
        args = (marks / f"args-{rank}").read_text().split()
        assert "--nnodes=2" in args and "--nproc-per-node=8" in args
        assert f"--node-rank={rank}" in args
        assert "--rdzv-backend=c10d" in args and "--rdzv-id=4242" in args
        assert "--rdzv-endpoint=10.1.0.10:29500" in args
        assert f"--rdzv-conf=is_host={1 if rank == 0 else 0}" in args
        assert f"--local-addr={address}" in args
        assert args[-3:] == ["train.py", "--epochs", "1"], args
    assert out.count("launcher node=") == 2, out


def test_usr1_reaches_every_rank_and_the_job_requeues_itself(tmp_path: Path) -> None:
    process, marks = _start(tmp_path)
    _wait_for("both ranks", lambda: _ranks_ready(marks))
    process.send_signal(signal.SIGUSR1)
    out, _ = process.communicate(timeout=WAIT)
    assert process.returncode == 0, out
    for rank in (0, 1):
        assert (marks / f"rank-{rank}").read_text() == "ready\nusr1\n", out
        args = (marks / f"args-{rank}").read_text().split()
        trainer = ["-m", "gpucluster.train", "--checkpoint-dir", str(tmp_path / "ckpt"), "--steps", "1000"]
        assert args[-6:] == trainer, args
    assert (marks / "scontrol").read_text() == "requeue 4242\n"
    assert "the time limit is near; asking every rank to save a checkpoint" in out
    assert f"requeueing job 4242: it resumes from {tmp_path / 'ckpt'}" in out


def test_a_failed_rank_fails_the_job_loudly(tmp_path: Path) -> None:
    process, marks = _start(tmp_path)
    _wait_for("both ranks", lambda: _ranks_ready(marks))
    # The ranks die on their own (not Slurm's warning): no requeue, a failure naming the fix.
    for rank in (0, 1):
        os.kill(int((marks / f"rank-{rank}.pid").read_text()), signal.SIGKILL)
    out, _ = process.communicate(timeout=WAIT)
    assert process.returncode == 1, out
    assert "torchrun exited" in out
    assert "FAILED: training exited" in out and "TRAIN_CHECKPOINT_DIR=" in out
    assert not (marks / "scontrol").exists()


def test_bad_settings_fail_before_anything_starts(tmp_path: Path) -> None:
    script = _script(tmp_path)
    marks, env = _tools(tmp_path)
    result = subprocess.run(
        ["bash", str(script)],
        env={**env, "TRAIN_NPROC_PER_NODE": "eight"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "FAILED: TRAIN_NPROC_PER_NODE='eight' is not a positive whole number" in result.stdout
    assert not list(marks.iterdir())
    no_slurm = {key: value for key, value in env.items() if key != "SLURM_JOB_ID"}
    result = subprocess.run(["bash", str(script)], env=no_slurm, capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "run this job through Slurm: sbatch" in result.stdout


@pytest.mark.parametrize(
    ("limit", "seconds"),
    [("5:00", 300), ("1:00:00", 3600), ("2-03:04:05", 183845), ("08:09", 489), ("UNLIMITED", 0), ("", 0)],
)
def test_slurm_time_limits_read_as_seconds(limit: str, seconds: int) -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = torchrun_of(cfg, cfg.compute_groups[0])
    result = subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; slurm_seconds "{limit}"', script],
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == str(seconds)


def test_a_limit_inside_the_warning_is_refused_before_anything_starts(tmp_path: Path) -> None:
    # USR1 would come at once and the job would checkpoint and requeue itself for ever.
    script = _script(tmp_path)
    marks, env = _tools(tmp_path)
    result = subprocess.run(
        ["bash", str(script)], env={**env, "FAKE_LIMIT": "15:00"}, capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert (
        f"FAILED: --time 15:00 leaves no room for training before the checkpoint warning {SIGNAL_SECONDS} s"
        in (result.stdout)
    )
    assert not list(marks.iterdir())


def test_readmes_first_run_names_the_default_examples_job_and_its_output() -> None:
    """README's "Your first training run" is pasted as is on a cluster of examples/default.yaml:
    the job file it submits is one the login nodes hold, and the file it tails is the one the
    job writes (`--output=%x-%j.out`, %x the job name)."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Your first training run", 1)[1].split("\n### ", 1)[0]
    [jobs_dir] = re.findall(r"^ +cd ~ && J=(\S+)", section, flags=re.MULTILINE)
    [tailed] = re.findall(r"tail -f (\S+)-<job id>\.out", section)
    cfg = load_config(REPO / "examples" / "default.yaml")
    bundle = bundle_files(resolve(cfg))
    assert f"files/login{jobs_dir}/{JOB}.sbatch" in bundle, f"README's J={jobs_dir} is no group's jobs"
    script = torchrun_of(cfg, cfg.compute_groups[0])
    assert directives(script)["output"] == "%x-%j.out"
    assert directives(script)["job-name"] == tailed

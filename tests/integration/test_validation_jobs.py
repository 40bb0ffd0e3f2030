"""The rendered validation jobs on real Slurm: each sbatch file is submitted as a user would,
allocated on the fake-GPU nodes, and writes the output the gate reads, with stand-in tools
that print real-format output (tests/integration/validation_stubs.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.efa import efa_count
from gpucluster.job_output import parse_efa_check_line, parse_pair_line
from gpucluster.jobs import validation
from gpucluster.jobs.validation import job_files, job_path
from gpucluster.launch.gpu_env import LIBRARY_DIRS
from gpucluster.resolved import resolve
from tests.integration.cluster import SlurmCluster
from tests.integration.test_torchrun_job import finished as finished_torchrun
from tests.integration.test_torchrun_job import submit as submit_torchrun
from tests.integration.validation_stubs import (
    NCCL_TESTS,
    NETWORK_VARIABLES,
    write_failing_pingpong,
    write_one_short_fi_info,
    write_stubs,
)
from tests.jobs.rendered import torchrun_of

pytestmark = pytest.mark.slurm

JOB_TIMEOUT = 90
QUICK_PINGPONG_TIMEOUT = 8
LARGEST = str(16 << 30)


@pytest.fixture
def jobs(cluster: SlurmCluster) -> dict[str, Path]:
    return render_jobs(cluster)


def render_jobs(cluster: SlurmCluster) -> dict[str, Path]:
    """The group's jobs rendered for the session cluster, as a login node installs them."""
    where = cluster.root / "validation"
    for path, text in job_files(resolve(cluster.cfg), cluster.install_node_lib()).items():
        target = where / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    return {
        job: where / job_path(cluster.group.name, job).lstrip("/")
        for job in ("efa-check", "nccl-tests", "nccl-pairwise", "dcgm-diag")
    }


def expected_efa_devices(cluster: SlurmCluster) -> int:
    """What the session nodes' fake fi_info lists: the catalog's count for the group."""
    return efa_count(cluster.group.instance) if cluster.group.efa else 0


@pytest.fixture
def stubs(cluster: SlurmCluster) -> dict[str, Path]:
    return write_stubs(cluster.root / "stubs", efa_devices=expected_efa_devices(cluster))


def submit(
    cluster: SlurmCluster, script: Path, *args: str, path: list[Path], extra_env: dict[str, str] | None = None
) -> tuple[str, Path]:
    """sbatch SCRIPT from a fresh submit directory. A test node has 2 CPUs, not one per GPU rank
    at the group's --cpus-per-task, and Slurm 22.05 refuses --overcommit with
    --ntasks-per-node: the command line (which overrides #SBATCH lines) asks for one task of
    one CPU per node. mpirun starts its ranks itself (a daemon per node), as Open MPI does, so
    the job still runs a rank per GPU; tests/jobs/test_validation_jobs.py checks the real values."""
    submit_dir = (
        cluster.root / "submit" / f"{script.stem}-{os.getpid()}-{len(list(cluster.root.glob('submit/*')))}"
    )
    submit_dir.mkdir(parents=True)
    env = {
        **cluster.env,
        # The stand-ins come before the suite's Slurm (a stand-in srun wraps the real one).
        "PATH": ":".join(
            [*(str(p) for p in path), *cluster.install.path, str(cluster.root / "bin"), os.environ["PATH"]]
        ),
    }
    env.update(extra_env or {})
    result = cluster.slurm(
        "sbatch",
        "--parsable",
        f"--chdir={submit_dir}",
        "--ntasks-per-node=1",
        "--cpus-per-task=1",
        str(script),
        *args,
        env=env,
    )
    return result.stdout.strip().split(";")[0], submit_dir


def finished(cluster: SlurmCluster, job: str, submit_dir: Path) -> tuple[str, str]:
    info = cluster.wait_job_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, JOB_TIMEOUT)
    outputs = list(submit_dir.glob("*.out"))
    text = outputs[0].read_text() if outputs else ""
    return info["JobState"], text


def run_nccl_job(
    cluster, jobs, stubs, name: str, *args: str, tests_dir: Path | None = None
) -> tuple[str, Path, str, str]:
    """An nccl job with the stand-in nccl-tests and mpirun: (job id, submit dir, state, output)."""
    job, submit_dir = submit(
        cluster,
        jobs[name],
        *args,
        path=[stubs["tools"]],
        extra_env={
            "NCCL_TESTS_DIR": str(tests_dir or stubs["nccl"]),
            "NCCL_TESTS_MPI_HOME": str(stubs["mpi"]),
        },
    )
    state, out = finished(cluster, job, submit_dir)
    return job, submit_dir, state, out


def test_efa_check_passes_every_node_with_a_pingpong_between_them(cluster, jobs, stubs):
    job, submit_dir = submit(cluster, jobs["efa-check"], path=[stubs["tools"]])
    state, out = finished(cluster, job, submit_dir)
    logs = sorted((submit_dir / f"efa-check-{job}").glob("pingpong-*.log"))
    assert state == "COMPLETED", (out, {log.name: log.read_text() for log in logs})
    checks = [c for c in map(parse_efa_check_line, out.splitlines()) if c is not None]
    assert sorted(c.node for c in checks) == sorted(cluster.nodes)
    expected_efa = expected_efa_devices(cluster)
    for check in checks:
        assert check.ok and check.efa_devices == check.expected_efa_devices == expected_efa, check
        assert check.gpus == 8
    assert len(logs) == 2 and all("MB/sec" in log.read_text() for log in logs), (logs, out)


def test_efa_check_names_a_node_short_of_an_efa_device_and_fails(cluster, jobs, stubs):
    broken = sorted(cluster.nodes)[1]
    expected = expected_efa_devices(cluster)
    short = write_one_short_fi_info(cluster.root / "stubs" / "one-short", expected, broken)
    job, submit_dir = submit(cluster, jobs["efa-check"], path=[short, stubs["tools"]])
    state, out = finished(cluster, job, submit_dir)
    assert state == "FAILED", out
    checks = {c.node: c for c in map(parse_efa_check_line, out.splitlines()) if c is not None}
    assert set(checks) == set(cluster.nodes)
    assert not checks[broken].ok and checks[broken].efa_devices == expected - 1
    assert checks[broken].reason == f"{expected - 1} EFA devices, want {expected}"
    assert all(check.ok for node, check in checks.items() if node != broken)
    assert f"FAILED: {broken} failed" in out and "scontrol update" in out


def test_efa_check_names_the_pair_of_a_failed_pingpong_and_drains_neither(cluster, stubs, monkeypatch):
    # A failed pair costs one PINGPONG_TIMEOUT: the bound is under test, not production's 30 s.
    monkeypatch.setitem(validation.WAITS, "PINGPONG_TIMEOUT", QUICK_PINGPONG_TIMEOUT)
    jobs = render_jobs(cluster)
    assert f"readonly PINGPONG_TIMEOUT={QUICK_PINGPONG_TIMEOUT}\n" in jobs["efa-check"].read_text()
    failing = write_failing_pingpong(cluster.root / "stubs" / "pingpong-fails")
    job, submit_dir = submit(cluster, jobs["efa-check"], path=[failing, stubs["tools"]])
    state, out = finished(cluster, job, submit_dir)
    assert state == "FAILED", out
    checks = {c.node: c for c in map(parse_efa_check_line, out.splitlines()) if c is not None}
    first, second = sorted(checks)
    assert checks[first].ok and checks[first].pingpong_failed_with == (second,), out
    assert checks[second].ok and checks[second].pingpong_failed_with == (first,), out
    assert "fi_pingpong failed between" in out and "scontrol update" not in out
    why = "fi_pingpong: fi_getinfo(): -61 (No data available)"
    # The job pairs nodes in Slurm's order, which need not be the sorted one.
    pair = {f"{first} <- {second}", f"{second} <- {first}"}
    for end in ("server", "client"):
        said = [line for line in out.splitlines() if f" failed; {end} said: " in line]
        assert len(said) == 1 and any(f"{p} failed" in said[0] for p in pair), out
        assert why in said[0], out
    output = next(submit_dir.glob("*.out"))
    result = CliRunner().invoke(app, ["gate", str(output)])
    assert result.exit_code == 1 and "scontrol" not in result.output, result.output
    assert "other partners" in result.output


def test_nccl_tests_write_a_log_and_json_per_collective(cluster, jobs, stubs):
    job, submit_dir, state, out = run_nccl_job(cluster, jobs, stubs, "nccl-tests")
    assert state == "COMPLETED", out
    logs = submit_dir / f"nccl-tests-{job}"
    for collective in NCCL_TESTS:
        text = (logs / f"{collective}.log").read_text()
        # 16 ranks on 2 nodes, the sweep to 16 GiB, and the transport from NCCL_DEBUG=INFO.
        assert "#  Rank 15 " in text
        assert any(line.split()[:1] == [LARGEST] for line in text.splitlines()), text[-2000:]
        assert "Selected provider is efa, fabric is efa-direct (found 32 nics)" in text
        assert "# Collective test concluded" in text
        report = json.loads((logs / f"{collective}.json").read_text())
        assert report["results"][-1]["size"] == int(LARGEST)
        assert report["args"][1:9] == ["-b", "8", "-e", "16G", "-f", "2", "-g", "1"]


def test_nccl_tests_refuse_an_unknown_collective_loudly(cluster, jobs, stubs):
    job, submit_dir, state, out = run_nccl_job(cluster, jobs, stubs, "nccl-tests", "broadcast_perf")
    assert state == "FAILED"
    assert "unknown collective 'broadcast_perf'; choose from: all_reduce_perf" in out


def test_nccl_tests_without_the_binaries_fail_saying_what_to_set(cluster, jobs, stubs):
    empty = cluster.root / "no-nccl-tests"
    empty.mkdir(exist_ok=True)
    job, submit_dir, state, out = run_nccl_job(cluster, jobs, stubs, "nccl-tests", tests_dir=empty)
    assert state == "FAILED"
    assert f"are not all in {empty}; set NCCL_TESTS_DIR (validation.nccl_tests_dir)" in out


def test_pairwise_logs_start_with_the_pair_line(cluster, jobs, stubs):
    job, submit_dir, state, out = run_nccl_job(cluster, jobs, stubs, "nccl-pairwise")
    assert state == "COMPLETED", out
    logs = sorted((submit_dir / f"nccl-pairwise-{job}").glob("round*.log"))
    assert len(logs) == 1, logs
    text = logs[0].read_text()
    header = parse_pair_line(text.splitlines()[0])
    assert header is not None and header.round == 1
    assert sorted(header.nodes) == sorted(cluster.nodes)
    # The session cluster runs topology/flat: no node is in a switch (test_topology.py).
    assert header.switches == ("-", "-")
    assert "NET/OFI Selected provider is efa" in text and "# Avg bus bandwidth" in text
    assert "2 nodes: one pair, no second round" in out


def test_dcgm_diag_runs_dcgmi_on_every_node(cluster, jobs, stubs):
    job, submit_dir = submit(cluster, jobs["dcgm-diag"], path=[stubs["dcgm"]])
    state, out = finished(cluster, job, submit_dir)
    assert state == "COMPLETED", out
    log = (submit_dir / f"dcgm-diag-{job}" / "dcgm-diag.log").read_text()
    for node in cluster.nodes:
        assert f"gpucluster-dcgm-diag node={node} result=pass reason=dcgmi diag -r 2 passed" in log


def test_dcgm_diag_skips_clearly_without_dcgm(cluster, jobs, stubs):
    job, submit_dir = submit(cluster, jobs["dcgm-diag"], path=[])
    state, out = finished(cluster, job, submit_dir)
    assert state == "COMPLETED", out
    for node in cluster.nodes:
        assert f"gpucluster-dcgm-diag node={node} result=skip reason=dcgmi is not installed" in out


# A torchrun rank's view of the network set-up, as the stand-in nccl-tests record theirs.
ENV_PROBE = """
import json, os, sys
keys = sys.argv[1].split(",")
with open(os.path.join(os.environ["STUB_ENV_RECORD"], f"torchrun-{os.environ['RANK']}.json"), "w") as out:
    json.dump({key: os.environ.get(key) for key in keys}, out)
"""


def test_the_gate_and_training_ranks_run_in_one_network_environment(cluster, jobs, stubs):
    """The nccl-tests ranks (mpirun on the host) and the torchrun job's ranks see the same
    NCCL_NET, NCCL_NET_PLUGIN and FI_PROVIDER, and the plugin's directories first on
    LD_LIBRARY_PATH: both come from the node's gpu-env.sh and nowhere else."""
    pytest.importorskip("torch")
    record = cluster.root / f"env-record-{os.getpid()}"
    record.mkdir()
    job, submit_dir = submit(
        cluster,
        jobs["nccl-tests"],
        "all_reduce_perf",
        path=[stubs["tools"]],
        extra_env={
            "NCCL_TESTS_DIR": str(stubs["nccl"]),
            "NCCL_TESTS_MPI_HOME": str(stubs["mpi"]),
            "STUB_ENV_RECORD": str(record),
        },
    )
    state, out = finished(cluster, job, submit_dir)
    assert state == "COMPLETED", out
    probe = record / "probe.py"
    probe.write_text(ENV_PROBE)
    torchrun = cluster.root / "validation" / job_path(cluster.group.name, "torchrun").lstrip("/")
    torchrun.write_text(torchrun_of(cluster.cfg, cluster.group, cluster.install_node_lib()))
    job_id, train_dir = submit_torchrun(
        cluster,
        torchrun,
        "env",
        str(probe),
        ",".join(NETWORK_VARIABLES),
        env={"STUB_ENV_RECORD": str(record)},
    )
    info, train_out = finished_torchrun(cluster, job_id, train_dir)
    assert info["JobState"] == "COMPLETED", train_out
    seen = {path.name: json.loads(path.read_text()) for path in record.glob("*.json")}
    nccl = [values for name, values in seen.items() if name.startswith("nccl-")]
    ranks = [values for name, values in seen.items() if name.startswith("torchrun-")]
    assert len(nccl) == 2 * cluster.group.instance.gpu_count and len(ranks) == 4, sorted(seen)
    network = ("NCCL_NET", "NCCL_NET_PLUGIN", "FI_PROVIDER")
    views = {tuple(values[key] for key in network) for values in nccl + ranks}
    assert views == {("AWS Libfabric", "ofi", "efa")}, views
    first = [values["LD_LIBRARY_PATH"].split(":")[: len(LIBRARY_DIRS)] for values in nccl + ranks]
    assert all(dirs == list(LIBRARY_DIRS) for dirs in first), seen
    # The gate reads the network NCCL_NET made NCCL use.
    log = (submit_dir / f"nccl-tests-{job}" / "all_reduce_perf.log").read_text()
    assert "Using network AWS Libfabric" in log

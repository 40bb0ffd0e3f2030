"""The validation jobs render for every group of every example, land on login nodes through
the bundle, pass shellcheck, and print the lines gpucluster.job_output parses."""

from __future__ import annotations

import re
import subprocess
from fnmatch import fnmatch
from pathlib import Path

import pytest
from pydantic import ValidationError

from gpucluster.bad_input import BadInput
from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.render_files import render_to_dir
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.efa import efa_count
from gpucluster.job_output import parse_efa_check_line, parse_pair_line
from gpucluster.jobs import validation as jobs
from gpucluster.jobs.validation import (
    DCGM_DIAG_LEVEL,
    JOB_NAMES,
    NCCL_COLLECTIVES,
    TIME_LIMITS,
    WAITS,
    dcgm_job_minutes,
    import_job_path,
    job_files,
    job_path,
)
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from tests.jobs.rendered import job_of
from tests.shellcheck import assert_shellcheck_clean

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.yaml"))
LEGACY_VARIABLES = ("FI_EFA_USE_DEVICE_RDMA", "NCCL_BUFFSIZE", "NCCL_PROTO", "RDMAV_")


@pytest.fixture(params=EXAMPLES, ids=lambda path: path.stem)
def cfg(request: pytest.FixtureRequest) -> ClusterConfig:
    return load_config(request.param)


def directives(script: str) -> dict[str, str]:
    found = re.findall(r"^#SBATCH --([a-z-]+)=(\S+)$", script, flags=re.MULTILINE)
    return dict(found)


def test_every_group_gets_every_job_on_login_nodes(cfg: ClusterConfig) -> None:
    jobs = job_files(resolve(cfg))
    bundle = bundle_files(resolve(cfg))
    assert len(jobs) == len(JOB_NAMES) * len(cfg.compute_groups) + 1
    assert bundle[f"files/login{import_job_path()}"] == jobs[import_job_path()]
    for group in cfg.compute_groups:
        for job in JOB_NAMES:
            path = job_path(group.name, job)
            assert path.startswith(f"{NODE_LAYOUT.jobs_dir}/{group.name}/")
            assert bundle[f"files/login{path}"] == jobs[path]
            assert f'"{path}"' in bundle["conf/cluster.sh"]
    assert "step install_validation_jobs" in bundle["lib/roles.sh"]


def test_directives_follow_the_catalog(cfg: ClusterConfig) -> None:
    for group in cfg.compute_groups:
        instance = group.instance
        for job in JOB_NAMES:
            found = directives(job_of(cfg, group, job))
            assert found["partition"] == group.name
            assert found["gpus-per-node"] == str(instance.gpu_count)
            assert found["export"] == "ALL"
            assert int(found["time"]) > 0
        for job in ("nccl-tests", "nccl-pairwise"):
            found = directives(job_of(cfg, group, job))
            assert found["ntasks-per-node"] == str(instance.gpu_count)
            assert found["cpus-per-task"] == str(instance.vcpus // instance.gpu_count)
        for job in ("efa-check", "dcgm-diag"):
            assert directives(job_of(cfg, group, job))["ntasks-per-node"] == "1"
        efa = efa_count(instance) if group.efa else 0
        assert f"readonly EXPECTED_EFA={efa}\n" in job_of(cfg, group, "efa-check")


def test_nccl_jobs_sweep_to_16_gib_with_info_and_no_legacy_variables(cfg: ClusterConfig) -> None:
    for group in cfg.compute_groups:
        for job in ("nccl-tests", "nccl-pairwise"):
            script = job_of(cfg, group, job)
            assert "-b 8 -e 16G -f 2 -g 1" in script
            assert "export NCCL_DEBUG=INFO" in script
            assert "-J " in script and "--output_file" in script
            for name in LEGACY_VARIABLES:
                assert not re.search(rf"(export|-x)\s+{name}", script), (job, name)
        nccl = job_of(cfg, group, "nccl-tests")
        for collective in ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf"):
            assert collective in nccl


def test_time_limits_hold_every_bounded_run() -> None:
    run = WAITS["NCCL_RUN_TIMEOUT"] + WAITS["KILL_GRACE"]
    checks = WAITS["IMAGE_TIMEOUT"] + WAITS["PROBE_TIMEOUT"] + 2 * WAITS["KILL_GRACE"]
    assert checks + len(NCCL_COLLECTIVES) * run < TIME_LIMITS["nccl-tests"] * 60
    assert checks + 2 * run < TIME_LIMITS["nccl-pairwise"] * 60
    assert dcgm_job_minutes()[DCGM_DIAG_LEVEL] <= TIME_LIMITS["dcgm-diag"]


def test_jobs_pass_shellcheck(cfg: ClusterConfig, tmp_path: Path) -> None:
    assert_shellcheck_clean(job_files(resolve(cfg)), tmp_path)


def _bash(script: str, snippet: str) -> str:
    """Source a rendered job (its main does not run when sourced) and run `snippet`."""
    result = subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; {snippet}', script],
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_printed_lines_parse_as_the_gate_reads_them() -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    group = cfg.compute_groups[0]
    pairwise = job_of(cfg, group, "nccl-pairwise")
    pair_format = re.search(r"printf '([^']*)' \"\$\{round\}\"", pairwise)
    assert pair_format is not None
    line = _bash(pairwise, f"printf '{pair_format[1]}' 2 gpu-i-0a gpu-i-0b nn-leaf-a -")
    header = parse_pair_line(line)
    assert header is not None and header.round == 2 and header.nodes == ("gpu-i-0a", "gpu-i-0b")
    assert header.switches == ("nn-leaf-a", "-")

    efa_check = job_of(cfg, group, "efa-check")
    formats = re.findall(r"printf '(gpucluster-efa-check[^']*)'", efa_check)
    assert len(formats) == 2
    line = _bash(efa_check, f"printf '{formats[1]}' gpu-i-0a fail 31 32 8 gpu-i-0b '31 EFA devices, want 32'")
    check = parse_efa_check_line(line)
    assert check is not None and not check.ok and check.efa_devices == 31
    assert check.reason == "31 EFA devices, want 32" and check.pingpong_failed_with == ("gpu-i-0b",)


@pytest.mark.parametrize("count", range(2, 9))
def test_pairwise_rounds_are_disjoint_and_change_partners(count: int) -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = job_of(cfg, cfg.compute_groups[0], "nccl-pairwise")
    rounds = []
    for round_number in (1, 2):
        out = _bash(script, f"pair_indices {count} {round_number}")
        pairs = [tuple(int(i) for i in line.split()) for line in out.splitlines()]
        used = [node for pair in pairs for node in pair]
        assert len(used) == len(set(used)), pairs
        assert len(pairs) == count // 2
        rounds.append({frozenset(pair) for pair in pairs})
    if count > 2:
        assert not rounds[0] & rounds[1], rounds
        # Every node is tested in some round.
        assert {node for pair in rounds[0] | rounds[1] for node in pair} == set(range(count))


def test_settings_render_and_reject_unsafe_values() -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    group = cfg.compute_groups[0]
    default = job_of(cfg, group, "nccl-tests")
    assert 'CONFIGURED_TESTS_DIR="${NCCL_TESTS_DIR:-}"' in default
    assert 'CONTAINER_IMAGE="${NCCL_TESTS_CONTAINER-}"' in default
    image = "nvcr.io#nvidia/pytorch:25.06-py3"
    settings = {"nccl_tests_dir": "/opt/nccl-tests/build", "container_image": image}
    custom = cfg.model_copy(update={"validation": cfg.validation.model_validate(settings)})
    rendered = job_of(custom, group, "nccl-tests")
    assert 'CONFIGURED_TESTS_DIR="${NCCL_TESTS_DIR:-/opt/nccl-tests/build}"' in rendered
    assert f'CONTAINER_IMAGE="${{NCCL_TESTS_CONTAINER-{image}}}"' in rendered
    unsafe = ({"nccl_tests_dir": "relative"}, {"nccl_tests_dir": "/a b"}, {"container_image": "x;rm -rf /"})
    for bad in unsafe:
        with pytest.raises(ValidationError):
            cfg.validation.model_validate(bad)


def test_unknown_job_is_refused() -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    with pytest.raises(ValueError, match="unknown validation job"):
        job_of(cfg, cfg.compute_groups[0], "burn-in")


# The pairwise job's rounds with the launcher replaced: run_nccl fails for the pair holding
# $BAD_NODE, and notes a stdin other than /dev/null: srun and mpirun hand stdin to the first
# rank, which would eat the round's list of pairs (seen: a pair skipped under load).
FAKE_LAUNCH = """
job_nodes() { printf 'n%s\\n' $(seq 1 "${NODE_COUNT}"); }
check_nccl_tests() { :; }
run_nccl() {
  local stdin
  stdin=$(readlink "/proc/${BASHPID}/fd/0")
  [[ "${stdin}" == /dev/null ]] || echo "stdin is ${stdin}" >>"$1"
  echo "ran $2 on $3 $4" >>"$1"
  [[ "$3" != "${BAD_NODE:-}" && "$4" != "${BAD_NODE:-}" ]]
}
OUT_DIR="$PWD"
run_rounds
"""


def _rounds(script: str, tmp_path: Path, nodes: int, bad: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; {FAKE_LAUNCH}', script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "NODE_COUNT": str(nodes), "BAD_NODE": bad},
    )


@pytest.mark.parametrize("nodes", [4, 5])
def test_pairwise_runs_both_rounds_and_each_log_starts_with_its_pair(tmp_path: Path, nodes: int) -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = job_of(cfg, cfg.compute_groups[0], "nccl-pairwise")
    result = _rounds(script, tmp_path, nodes)
    assert result.returncode == 0, result.stdout + result.stderr
    logs = sorted(tmp_path.glob("round*.log"))
    assert len(logs) == 2 * (nodes // 2)
    pairs = set()
    for log in logs:
        first, second = log.read_text().splitlines()
        header = parse_pair_line(first)
        assert header is not None and log.name.startswith(f"round{header.round}-")
        assert second == f"ran all_reduce_perf on {header.nodes[0]} {header.nodes[1]}"
        pairs.add(frozenset(header.nodes))
    assert len(pairs) == len(logs)


def test_pairwise_goes_on_after_a_failed_pair_and_fails_loudly(tmp_path: Path) -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = job_of(cfg, cfg.compute_groups[0], "nccl-pairwise")
    result = _rounds(script, tmp_path, 4, bad="n2")
    assert result.returncode == 1
    assert len(list(tmp_path.glob("round*.log"))) == 4
    assert "pair failed (exit 1)" in result.stdout and "round1-n1-n2.log" in result.stdout
    assert "round2-n2-n3.log" in result.stdout
    assert "FAILED: some pairs did not finish; gpucluster gate names the nodes" in result.stdout


def test_a_bad_setting_is_an_error_naming_the_file_and_field(tmp_path: Path) -> None:
    config = tmp_path / "cluster.yaml"
    text = (REPO / "examples" / "default.yaml").read_text()
    config.write_text(text + "validation:\n  container_image: 'img; reboot'\n")
    with pytest.raises(BadInput) as info:
        load_config(config)
    message = str(info.value)
    assert str(config) in message and "validation.container_image" in message
    assert "is not an image reference" in message


def test_render_writes_every_job_executable(tmp_path: Path) -> None:
    cfg = load_config(REPO / "examples" / "mixed.yaml")
    render_to_dir(cfg, tmp_path)
    for group in cfg.compute_groups:
        for job in JOB_NAMES:
            path = tmp_path / "bundle" / "files" / "login" / job_path(group.name, job).lstrip("/")
            assert path.read_text() == job_of(cfg, group, job)
            assert path.stat().st_mode & 0o111


def test_nccl_jobs_without_nccl_tests_settings_off_a_dlami_say_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jobs, "DLAMI_CUDA_LINK", str(tmp_path / "cuda"))
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = job_of(cfg, cfg.compute_groups[0], "nccl-tests")
    result = subprocess.run(
        ["bash", "-c", 'source /dev/stdin <<<"$0"; find_nccl_tests', script],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 1
    assert f"{tmp_path / 'cuda'} does not exist: not a DLAMI?" in result.stdout


def _written_names(script: str, job: str, job_id: str) -> set[str]:
    """What a job writes in its submit directory, from its own directives and OUT_DIR lines."""
    name = re.search(r"^#SBATCH --job-name=(\S+)$", script, re.M)
    output = re.search(r"^#SBATCH --output=(\S+)$", script, re.M)
    out_dir = re.search(r'OUT_DIR="\$\{GPUCLUSTER_JOB_OUT:-\$\{PWD\}\}/([^"]+)"', script)
    assert name and output and out_dir
    directory = out_dir[1].replace("${JOB}", job).replace("${SLURM_JOB_ID}", job_id)
    logs = {re.sub(r"\$\{[^}]+\}", "x", log) for log in re.findall(r'\$\{OUT_DIR\}/([^"\s]+\.log)"', script)}
    return {output[1].replace("%x", name[1]).replace("%j", job_id)} | {f"{directory}/{log}" for log in logs}


def test_readme_gate_command_names_the_files_the_jobs_write() -> None:
    cfg = load_config(REPO / "examples" / "default.yaml")
    group = cfg.compute_groups[0]
    readme = (REPO / "README.md").read_text()
    (command,) = [
        line.split() for line in readme.splitlines() if line.strip().startswith("gpucluster gate --")
    ]
    assert command[command.index("--group") + 1] == group.name
    paths = [word.replace("<id>", "4242") for word in command if "<id>" in word]
    for job in ("efa-check", "nccl-tests", "nccl-pairwise"):
        written = _written_names(job_of(cfg, group, job), job, "4242")
        # The gate reads efa-check's lines from its .out, the nccl jobs' runs from their logs.
        wanted = {name for name in written if name.endswith(".out" if job == "efa-check" else ".log")}
        assert any(fnmatch(name, path) for name in wanted for path in paths), (job, written, paths)
    # Every path the README names is one a job writes.
    every = {
        name
        for job in ("efa-check", "nccl-tests", "nccl-pairwise", "dcgm-diag")
        for name in _written_names(job_of(cfg, group, job), job, "4242")
    }
    assert all(any(fnmatch(name, path) for name in every) for path in paths), (paths, every)


def test_job_time_limits_stay_within_the_groups_max_time(tmp_path: Path) -> None:
    config = tmp_path / "cluster.yaml"
    default = (REPO / "examples" / "default.yaml").read_text()
    config.write_text(
        default.replace("    count: 2\n", "    count: 2\n    default_time: 10\n    max_time: 20\n", 1)
    )
    cfg = load_config(config)
    group = cfg.compute_groups[0]
    limits = {job: re.search(r"^#SBATCH --time=(\d+)$", job_of(cfg, group, job), re.M) for job in JOB_NAMES}
    assert {job: int(found[1]) for job, found in limits.items() if found} == {
        "efa-check": 15,
        "nccl-tests": 20,
        "nccl-pairwise": 20,
        "dcgm-diag": 20,
    }


def test_pair_lines_name_each_nodes_leaf_switch(tmp_path: Path) -> None:
    """The switch is the last unit of the node's Topology= in `scontrol show node`; a node in
    no switch (or no scontrol answer) is named '-'."""
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = job_of(cfg, cfg.compute_groups[0], "nccl-pairwise")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scontrol = bin_dir / "scontrol"
    scontrol.write_text(
        "#!/bin/bash\n"
        'case "$3" in\n'
        '  n1|n2) echo "NodeName=$3 Topology=default:ec2:nn-top:nn-spine:nn-leaf-$3 State=IDLE" ;;\n'
        '  n3) echo "NodeName=n3 Arch=x86_64 State=IDLE" ;;\n'
        "  *) exit 1 ;;\n"
        "esac\n"
    )
    scontrol.chmod(0o755)
    result = subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; {FAKE_LAUNCH}', script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "NODE_COUNT": "4", "BAD_NODE": ""},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    headers = {}
    for log in tmp_path.glob("round*.log"):
        header = parse_pair_line(log.read_text().splitlines()[0])
        assert header is not None
        headers[header.nodes] = header.switches
    assert headers[("n1", "n2")] == ("nn-leaf-n1", "nn-leaf-n2")
    assert headers[("n3", "n4")] == ("-", "-")

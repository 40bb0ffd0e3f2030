"""The efa-check job's pairing of nodes for fi_pingpong, run as bash with stand-ins for
scontrol and srun: which pairs run at once, the odd node's second wave, failures read back
into the job's lines, and that the largest group's run fits the job's time limit."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
from annotated_types import Le

from gpucluster.config.loader import load_config
from gpucluster.config.nodes import ComputeGroupConfig
from gpucluster.job_output import EfaCheck, parse_efa_check_line
from gpucluster.jobs import validation as jobs
from gpucluster.jobs.validation import TIME_LIMITS, WAITS
from tests.jobs.rendered import job_of

REPO = Path(__file__).resolve().parents[2]

# The efa-check job after its node probe: NODES are the job's nodes, each with 8 GPUs and
# its EFA devices seen; scontrol fails (a node missing from Slurm's table, or slurmctld down).
FAKE_EFA_CHECK = """
job_nodes() { printf '%s\\n' ${NODES}; }
scontrol() { return 1; }
OUT_DIR="$PWD"
for node in ${NODES}; do GPUS_SEEN[${node}]=8; EFA_SEEN[${node}]="${EXPECTED_EFA}"; done
pingpong_pairs
report
"""


def _run_efa_check(
    tmp_path: Path, tail: str, env: dict[str, str]
) -> tuple[subprocess.CompletedProcess[str], dict[str, EfaCheck]]:
    """The default example's efa-check sourced into bash, then `tail` run instead of main;
    what it printed and its efa-check lines by node."""
    cfg = load_config(REPO / "examples" / "default.yaml")
    script = job_of(cfg, cfg.compute_groups[0], "efa-check")
    result = subprocess.run(
        ["bash", "-c", f'source /dev/stdin <<<"$0"; {tail}', script],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    checks = [parse_efa_check_line(line) for line in result.stdout.splitlines()]
    return result, {check.node: check for check in checks if check is not None}


def _efa_check(tmp_path: Path, nodes: str) -> tuple[subprocess.CompletedProcess[str], dict[str, EfaCheck]]:
    return _run_efa_check(tmp_path, FAKE_EFA_CHECK, {"PATH": "/usr/bin:/bin", "NODES": nodes})


def test_efa_check_reports_a_node_scontrol_cannot_address_instead_of_exiting_silently(tmp_path: Path) -> None:
    result, checks = _efa_check(tmp_path, "n1 n2")
    assert result.returncode == 1, result.stdout + result.stderr
    assert set(checks) == {"n1", "n2"}, result.stdout + result.stderr
    assert not checks["n1"].ok and checks["n1"].reason == "no NodeAddr in scontrol"
    assert checks["n2"].ok


def test_efa_check_on_one_node_notes_the_missing_partner_without_failing_it(tmp_path: Path) -> None:
    result, checks = _efa_check(tmp_path, "n1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert checks["n1"].ok and checks["n1"].pingpong_failed_with == ()
    assert "note: no partner for fi_pingpong" in result.stdout


# srun for the pairing tests: each end of a pair records when it begins and ends; a server on
# a node named in FAIL_SERVERS fails (as fi_pingpong does when its node has no EFA path).
FAKE_SRUN = """#!/bin/bash
node=""
role=server
for arg in "$@"; do
  case "${arg}" in
    --nodelist=*) node="${arg#--nodelist=}" ;;
    10.0.0.*) role=client ;;
  esac
done
echo "begin ${node} ${role}" >>"${TRACE}"
sleep 0.3
echo "end ${node} ${role}" >>"${TRACE}"
if [[ "${role}" == server && " ${FAIL_SERVERS:-} " == *" ${node} "* ]]; then
  echo "fi_pingpong: fi_getinfo(): -61 (No data available)" >&2
  exit 1
fi
echo "256     10      =10      5k          0.00s     21.19      12.08       0.08"
"""

PAIRING = """
job_nodes() { printf '%s\\n' ${NODES}; }
scontrol() { echo "NodeName=$4 Arch=x86_64 NodeAddr=10.0.0.${4#n} NodeHostName=$4"; }
OUT_DIR="$PWD"
for node in ${NODES}; do GPUS_SEEN[${node}]=8; EFA_SEEN[${node}]="${EXPECTED_EFA}"; done
pingpong_pairs
report
"""


def _pairing(
    tmp_path: Path, nodes: str, fail_servers: str = ""
) -> tuple[int, list[str], dict[str, EfaCheck]]:
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "srun").write_text(FAKE_SRUN)
    (tools / "srun").chmod(0o755)
    trace = tmp_path / "trace"
    env = {
        "PATH": f"{tools}:/usr/bin:/bin",
        "NODES": nodes,
        "TRACE": str(trace),
        "FAIL_SERVERS": fail_servers,
    }
    result, found = _run_efa_check(tmp_path, PAIRING, env)
    assert set(found) == set(nodes.split()), result.stdout + result.stderr
    return result.returncode, trace.read_text().splitlines(), found


def test_disjoint_pairs_run_at_once_and_the_odd_node_pairs_with_the_first_afterwards(tmp_path: Path) -> None:
    rc, trace, checks = _pairing(tmp_path, "n1 n2 n3 n4 n5")
    assert rc == 0 and all(check.ok and not check.pingpong_failed_with for check in checks.values())
    assert trace.index("begin n3 server") < trace.index("end n1 server"), trace
    first_wave_ends = max(
        trace.index(f"end {node} {role}")
        for node, role in (("n1", "server"), ("n2", "client"), ("n3", "server"), ("n4", "client"))
    )
    assert trace.index("begin n5 server") > first_wave_ends, trace
    assert "begin n1 client" in trace[first_wave_ends:], trace


def test_no_more_pairs_run_at_once_than_pingpong_parallel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(jobs.WAITS, "PINGPONG_PARALLEL", 1)
    rc, trace, _ = _pairing(tmp_path, "n1 n2 n3 n4")
    assert rc == 0
    assert trace.index("begin n3 server") > trace.index("end n2 client"), trace


def test_a_failed_pair_is_read_back_into_both_nodes_lines_with_what_fi_pingpong_said(tmp_path: Path) -> None:
    rc, _, checks = _pairing(tmp_path, "n1 n2 n3 n4 n5", fail_servers="n3")
    assert rc == 1
    assert checks["n3"].pingpong_failed_with == ("n4",) and checks["n4"].pingpong_failed_with == ("n3",)
    assert all(checks[node].pingpong_failed_with == () for node in ("n1", "n2", "n5"))
    assert all(check.ok for check in checks.values())
    said = (tmp_path / "pingpong-n3-server.log").read_text()
    assert "fi_getinfo(): -61" in said


def test_the_largest_group_with_every_pair_timing_out_ends_within_the_time_limit() -> None:
    largest = next(
        rule.le for rule in ComputeGroupConfig.model_fields["count"].metadata if isinstance(rule, Le)
    )
    assert isinstance(largest, int)
    waves = math.ceil((largest // 2) / WAITS["PINGPONG_PARALLEL"]) + 1
    # A pair: the server bounded by PINGPONG_TIMEOUT plus its kill grace, and the client's first sleep.
    pair = WAITS["PINGPONG_TIMEOUT"] + WAITS["KILL_GRACE"] + 1
    probe = 3 * WAITS["PROBE_TIMEOUT"] + WAITS["KILL_GRACE"]
    assert probe + waves * pair < TIME_LIMITS["efa-check"] * 60

"""Stand-ins for the tools the validation jobs run on a GPU node, printing real-format output.

nccl-tests: the layout of nccl-tests 2.19.6 (../shared/fixtures/nccl/h200-1gpu-all_reduce-*):
the header, NCCL INFO lines (only under NCCL_DEBUG=INFO, as NCCL does) naming the EFA transport,
the table on rank 0, the summary, and `-J` JSON (version 3). mpirun: Open MPI's mpirun inside a
Slurm allocation starts a daemon per node through srun, which forks the node's ranks. fi_pingpong: the
client really connects to the server's address (its out-of-band TCP port), so a pair that
cannot reach each other fails. dcgmi: `dcgmi diag -r 2 -j`'s report.
"""

from __future__ import annotations

import sys
from pathlib import Path

NCCL_TESTS = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf")
# What gpu-env.sh sets: each stand-in rank records them under $STUB_ENV_RECORD when set.
NETWORK_VARIABLES = ("NCCL_NET", "NCCL_NET_PLUGIN", "FI_PROVIDER", "LD_LIBRARY_PATH")

NCCL_TEST = r"""#!{python}
# Test stand-in for nccl-tests 2.19.6 ({name}). Usage text names [-J,--output_file <file>].
import json, os, socket, sys

NAME = "{name}"
EFA_NICS = {efa}
NETWORK_VARIABLES = {network_variables!r}
args = sys.argv[1:]
if "-h" in args:
    print("USAGE: {name} [-b,--minbytes] [-e,--maxbytes] [-f,--stepfactor] [-g,--ngpus]"
          " [-J,--output_file <file> write output to filepath]")
    sys.exit(0)

def value(flag, default):
    return args[args.index(flag) + 1] if flag in args else default

def size(text):
    units = {{"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)

rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("SLURM_PROCID", "0")))
nranks = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
host = socket.gethostname()
pid = os.getpid()
minimum, maximum, factor = size(value("-b", "8")), size(value("-e", "8")), int(value("-f", "2"))
if os.environ.get("NCCL_DEBUG") == "INFO":
    print(f"{{host}}:{{pid}}:{{pid}} [0] NCCL INFO NCCL version 2.28.9+cuda13.0")
    print(f"{{host}}:{{pid}}:{{pid}} [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.3")
    print(f"{{host}}:{{pid}}:{{pid}} [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct"
          f" (found {{EFA_NICS}} nics)")
    print(f"{{host}}:{{pid}}:{{pid}} [0] NCCL INFO Using network {{os.environ.get('NCCL_NET', 'Libfabric')}}")
# What this rank's NCCL would read of its network set-up (tests/integration/test_validation_jobs.py
# compares it with the torchrun job's ranks).
if os.environ.get("STUB_ENV_RECORD"):
    with open(os.path.join(os.environ["STUB_ENV_RECORD"], f"nccl-{{NAME}}-{{rank}}.json"), "w") as out:
        json.dump({{key: os.environ.get(key) for key in NETWORK_VARIABLES}}, out)
if rank != 0:
    sys.exit(0)
reduce = NAME in ("all_reduce_perf", "reduce_scatter_perf")
bus_factor = 2 * (nranks - 1) / nranks if NAME == "all_reduce_perf" else (nranks - 1) / nranks
print("# nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809")
print(f"# Collective test starting: {{NAME}}")
print(f"# nThread 1 nGpus 1 minBytes {{minimum}} maxBytes {{maximum}} step: {{factor}}(factor)"
      " warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0")
print("#\n# Using devices")
for r in range(nranks):
    print(f"#  Rank {{r:2d}} Group  0 Pid {{pid:6d}} on {{host:>10}} device {{r % 8:2d}} [0000:00:06]"
          " NVIDIA H100 80GB HBM3")
print("#")
print("#" + " " * 62 + "out-of-place" + " " * 23 + "in-place" + " " * 10)
WIDTHS = (11, 14, 10, 8, 8, 9, 8, 8, 8, 9, 8, 8, 8)
for names in (("size", "count", "type", "redop", "root") + ("time", "algbw", "busbw", "#wrong") * 2,
              ("(B)", "(elements)", "", "", "") + ("(us)", "(GB/s)", "(GB/s)", "") * 2):
    print("#" + "".join(f"{{n:>{{w}}}}" for n, w in zip(names, WIDTHS)) + " ")
results = []
current = minimum
while current <= maximum:
    count = current // 4 if NAME == "all_reduce_perf" else current // 4 // max(nranks, 1)
    algbw = 240.0 * current / (current + 4.0e6)
    time_us = current / (algbw * 1e3) if algbw else 0.0
    busbw = algbw * bus_factor
    op = "sum" if reduce else "none"
    columns = f"{{time_us:7.2f}}  {{algbw:6.2f}}  {{busbw:6.2f}}       0"
    print(f"{{current:12d}}  {{count:12d}}     float  {{op:>6}}      -1  {{columns}}  {{columns}}")
    place = {{"time": time_us, "alg_bw": algbw, "bus_bw": busbw, "nwrong": 0.0}}
    results.append({{"size": current, "count": count, "type": "float", "redop": op, "root": "    -1",
                    "out_of_place": place, "in_place": place, "actual_iterations": 20}})
    current *= factor
average = sum(r["out_of_place"]["bus_bw"] for r in results) / len(results)
print("# Out of bounds values : 0 OK")
print(f"# Avg bus bandwidth    : {{average:g}} ")
print("#\n# Collective test concluded:", NAME)
print("#")
if "-J" in args:
    with open(value("-J", ""), "w") as out:
        json.dump({{"version": 3, "args": [NAME, *args], "nccl_version": 22809, "results": results,
                   "out_of_bounds": {{"count": 0, "okay": "true"}},
                   "average_bus_bandwidth": {{"bandwidth": average, "okay": "unchecked"}}}}, out)
"""

MPIRUN = r"""#!/bin/bash
# Test stand-in for Open MPI's mpirun in a Slurm allocation: like Open MPI, it starts one
# daemon per node through srun, and each daemon forks that node's ranks (OMPI_COMM_WORLD_*).
set -euo pipefail
hosts="" np="" per_node=""
while (($#)); do
  case "$1" in
    --host) hosts="$2"; shift 2 ;;
    -np) np="$2"; shift 2 ;;
    -N) per_node="$2"; shift 2 ;;
    --bind-to | -x) shift 2 ;;
    *) break ;;
  esac
done
nodes=$(sed -E 's/:[0-9]+//g' <<<"${hosts}")
count=$(tr ',' '\n' <<<"${nodes}" | wc -l)
export OMPI_COMM_WORLD_SIZE="${np}" PER_NODE="${per_node}"
# shellcheck disable=SC2016
exec srun --nodes="${count}" --nodelist="${nodes}" --ntasks="${count}" --ntasks-per-node=1 bash -c '
  for ((local_rank = 0; local_rank < PER_NODE; local_rank++)); do
    OMPI_COMM_WORLD_RANK=$((SLURM_PROCID * PER_NODE + local_rank)) "$@" &
  done
  wait' mpirun-daemon "$@"
"""

FI_PINGPONG = r"""#!{python}
# Test stand-in for fi_pingpong -p efa: the server listens on the out-of-band port, the client
# connects to the address it is given; both print the statistics table.
import socket, sys

args = [a for a in sys.argv[1:] if a not in ("-p", "efa")]
if args:
    sock = socket.create_connection((args[0], 47592), timeout=5)
    sock.sendall(b"ping")
    sock.recv(4)
else:
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", 47592))
    listener.listen(1)
    listener.settimeout(30)
    sock, _ = listener.accept()
    sock.recv(4)
    sock.sendall(b"pong")
print("bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec")
print("64      10      =10      1.2k        0.00s      5.34      11.99       0.08")
print("256     10      =10      5k          0.00s     21.19      12.08       0.08")
"""

DCGMI = r"""#!/bin/bash
# Test stand-in for `dcgmi diag -r 2 -j`: a passing report (tests/dcgm_reports.py's shape).
[[ "$*" == "diag -r 2 -j" ]] || { echo "unexpected: dcgmi $*" >&2; exit 2; }
cat <<'REPORT'
{"DCGM Diagnostic": {"test_categories": [
  {"category": "Deployment", "tests": [{"name": "software", "test_summary": {"status": "Pass"},
    "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"}]}]},
  {"category": "Hardware", "tests": [{"name": "memory", "test_summary": {"status": "Pass"},
    "results": [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": 0, "status": "Pass"}]}]}]},
 "metadata": {"version": "4.7.0"}}
REPORT
"""


# A node that lost one EFA device: fi_info on NODE lists one fewer. Only the job's PATH holds
# it, so the health check (its own PATH) does not drain the node under the test.
FI_INFO_ONE_SHORT = r"""#!/bin/bash
count={count}
if [[ "${{SLURMD_NODENAME:-}}" == "{node}" ]]; then
  count=$((count - 1))
fi
for ((i = 0; i < count; i++)); do
  for fabric in efa efa-direct; do
    printf 'provider: efa\n    fabric: %s\n    domain: rdmap%ss0-rdm\n' "$fabric" "$i"
  done
done
"""


def write_one_short_fi_info(directory: Path, efa_devices: int, node: str) -> Path:
    _write(directory / "fi_info", FI_INFO_ONE_SHORT.format(count=efa_devices, node=node))
    return directory


# fi_pingpong between two nodes whose own checks pass but whose EFA path fails (a security
# group without the self-referencing rule): both ends exit with libfabric's error.
FI_PINGPONG_FAILING = r"""#!/bin/bash
echo "fi_pingpong: fi_getinfo(): -61 (No data available)" >&2
exit 1
"""


def write_failing_pingpong(directory: Path) -> Path:
    _write(directory / "fi_pingpong", FI_PINGPONG_FAILING)
    return directory


# Test stand-in for pgrep: DCGM's nv-hostengine, which the dcgm-diag job looks for, runs.
PGREP = r"""#!/bin/bash
[[ "$*" == "-x nv-hostengine" ]] && exit 0
exec /usr/bin/pgrep "$@"
"""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def write_stubs(root: Path, efa_devices: int) -> dict[str, Path]:
    """Writes every stand-in under `root`; returns its directories by role."""
    dirs = {"tools": root / "tools", "dcgm": root / "dcgm", "nccl": root / "nccl-tests", "mpi": root / "mpi"}
    python = sys.executable
    for name in NCCL_TESTS:
        _write(
            dirs["nccl"] / name,
            NCCL_TEST.format(python=python, name=name, efa=efa_devices, network_variables=NETWORK_VARIABLES),
        )
    _write(dirs["mpi"] / "bin" / "mpirun", MPIRUN)
    _write(dirs["tools"] / "fi_pingpong", FI_PINGPONG.format(python=python))
    _write(dirs["dcgm"] / "dcgmi", DCGMI)
    _write(dirs["dcgm"] / "pgrep", PGREP)
    return dirs

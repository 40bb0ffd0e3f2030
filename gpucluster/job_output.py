"""The lines the validation jobs print for the gate to read back, defined once.

The jobs are shell (rendered from these formats through Jinja, printed with printf);
the gate parses the same lines. A pairwise nccl-tests log starts with a pair line,
so the gate can name the two nodes behind a slow or broken pair.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PAIR_MARK = "gpucluster-pair"
EFA_CHECK_MARK = "gpucluster-efa-check"

# printf formats for the shell jobs; every %s is one word except the last (reason).
# The pair line names each node's leaf switch (its Slurm Topology=), NO_SWITCH when it has none.
PAIR_PRINTF = PAIR_MARK + " round=%s nodes=%s,%s switches=%s,%s\\n"
NO_SWITCH = "-"
# efa-check: `result` and `reason` are the node's own checks (GPUs, EFA devices, its address);
# `pingpong_failed` the partners fi_pingpong failed with (comma-separated, NO_PARTNERS for
# none). A failed pingpong does not say which end is bad, so it is not the node's own result.
EFA_CHECK_PRINTF = EFA_CHECK_MARK + " node=%s result=%s efa=%s/%s gpus=%s pingpong_failed=%s reason=%s\\n"

EFA_OK = "ok"
EFA_FAIL = "fail"
NO_PARTNERS = "-"

# Launchers prefix each line (`srun -l`: "0: ", mpirun: "[1,0]<stdout>:"): match anywhere.
# switches= is optional: pair lines of jobs rendered before it.
_PAIR = re.compile(
    rf"{PAIR_MARK} round=(\d+) nodes=([^\s,]+),([^\s,]+)(?: switches=([^\s,]+),([^\s,]+))?\s*$"
)
# pingpong_failed is optional: lines from jobs rendered before it (their fail counts as the node's own).
_EFA_CHECK = re.compile(
    rf"{EFA_CHECK_MARK} node=(\S+) result=({EFA_OK}|{EFA_FAIL}) efa=(\d+)/(\d+) gpus=(\d+)"
    rf"(?: pingpong_failed=({re.escape(NO_PARTNERS)}|[^\s,]+(?:,[^\s,]+)*))? reason=(.*)$"
)


@dataclass(frozen=True)
class PairHeader:
    round: int
    nodes: tuple[str, str]
    # Each node's leaf switch, NO_SWITCH when it is in none; None from an older job.
    switches: tuple[str, str] | None = None


@dataclass(frozen=True)
class EfaCheck:
    node: str
    ok: bool
    efa_devices: int
    expected_efa_devices: int
    gpus: int
    reason: str
    pingpong_failed_with: tuple[str, ...] = ()


def pair_line(round_number: int, first: str, second: str, switches: tuple[str, str] | None = None) -> str:
    line = f"{PAIR_MARK} round={round_number} nodes={first},{second}"
    return line if switches is None else f"{line} switches={switches[0]},{switches[1]}"


def parse_pair_line(line: str) -> PairHeader | None:
    found = _PAIR.search(line)
    if found is None:
        return None
    switches = None if found.group(4) is None else (found.group(4), found.group(5))
    return PairHeader(int(found.group(1)), (found.group(2), found.group(3)), switches)


def efa_check_line(check: EfaCheck) -> str:
    result = EFA_OK if check.ok else EFA_FAIL
    return (
        f"{EFA_CHECK_MARK} node={check.node} result={result} "
        f"efa={check.efa_devices}/{check.expected_efa_devices} gpus={check.gpus} "
        f"pingpong_failed={','.join(check.pingpong_failed_with) or NO_PARTNERS} reason={check.reason}"
    )


def parse_efa_check_line(line: str) -> EfaCheck | None:
    found = _EFA_CHECK.search(line.rstrip("\n"))
    if found is None:
        return None
    node, result, efa, expected, gpus, partners, reason = found.groups()
    failed_with = () if partners in (None, NO_PARTNERS) else tuple(partners.split(","))
    return EfaCheck(node, result == EFA_OK, int(efa), int(expected), int(gpus), reason.strip(), failed_with)

"""DCGM's diagnostic (`dcgmi diag -r LEVEL -j`): how long each level may run, which levels a
node may run before it joins, and how its JSON report names the tests that failed.

The health check (gpucluster.slurm.node_conf) runs it before a node joins and the dcgm-diag
job (gpucluster.jobs.validation) on demand; both render the one jq filter below, so the
report is read one way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DiagLevel:
    """`nominal`: NVIDIA's own figure for the level; `bound`: how long the run may take here
    before it counts as hung (8 GPUs per node, nv-hostengine's plugin start-up included)."""

    level: int
    nominal: str
    bound_seconds: int


# dcgmi-diag(1), DCGM reference (docs.nvidia.com/datacenter/dcgm/latest, command-line reference,
# dcgmi diag, --run): level 1 "quick deployment checks, normally lasting seconds", 2 "medium
# validation, normally lasting approximately two minutes", 3 "long hardware diagnostics,
# normally lasting approximately 15 minutes", 4 "extended, longer-running" (no figure given).
# The bounds leave several times the nominal figure; level 4 gets 4 hours.
LEVELS: dict[int, DiagLevel] = {
    1: DiagLevel(1, "seconds", 120),
    2: DiagLevel(2, "about 2 minutes", 900),
    3: DiagLevel(3, "about 15 minutes", 3600),
    4: DiagLevel(4, "longer than level 3 (no figure published)", 14400),
}
# Before a node joins: its Auto Scaling launch waits, and the boot budget (whose heartbeat
# timeout Auto Scaling caps at 7,200 s) carries the longest of these. NVIDIA meant levels 3
# and 4 for an administrator's post-mortem: they run as the dcgm-diag job.
JOIN_LEVELS = (0, 1, 2)
DEFAULT_JOIN_LEVEL = 2
JOB_LEVELS = (1, 2, 3, 4)

# A jq program (`jq -n -r`) that prints one line per failed test, "<test> (GPU 3, GPU 5)", and
# "runtime error: <text>" when the diagnostic could not run; nothing when every test passed or
# was skipped; and fails (exit 5) on input that is not a report, empty input included. The
# schema is DCGM's (testing/python3/dcgm_diag_schema.json in NVIDIA/DCGM): under "DCGM
# Diagnostic", test_categories[].tests[] with name, results[] {entity_group, entity_id, status}
# and test_summary.status, and runtime_error; dcgmi writes statuses "Pass", "Fail", "Skip" and
# "Warn" (dcgmi/tests/DiagTests.cpp). A warning is not a failure.
_FAILED_TESTS = (
    '(."DCGM Diagnostic".runtime_error // empty | "runtime error: " + .), '
    '(."DCGM Diagnostic".test_categories[]?.tests[]? '
    '| select(.test_summary.status == "Fail" or any(.results[]?; .status == "Fail")) '
    '| [.results[]? | select(.status == "Fail") | "\\(.entity_group // "GPU") \\(.entity_id)"] as $on '
    '| .name + (if ($on | length) > 0 then " (" + ($on | join(", ")) + ")" else "" end))'
)
FAILED_TESTS_JQ = (
    'input | if type == "object" and has("DCGM Diagnostic") then '
    + _FAILED_TESTS
    + ' else error("not a dcgmi diag report") end'
)


def join_bound_seconds() -> int:
    """The longest a node's diagnostic before joining may run: the boot budget carries it."""
    return max(LEVELS[level].bound_seconds for level in JOIN_LEVELS if level)


def bounds_by_level(every: int | None = None) -> dict[int, int]:
    """Each level's bound, or `every` for all of them."""
    return {level: every or entry.bound_seconds for level, entry in LEVELS.items()}

"""`dcgmi diag -r LEVEL -j` reports for tests, built from DCGM's documented JSON schema
(NVIDIA/DCGM testing/python3/dcgm_diag_schema.json) and the statuses dcgmi writes
("Pass", "Fail", "Skip", "Warn": dcgmi/tests/DiagTests.cpp). No capture of a real run was
available; the tests read these as a real report would be read."""

from __future__ import annotations

import json

GPUS = 8
# Level 2's tests as DCGM 4 names them, by category.
LEVEL_2_TESTS = {
    "Deployment": ["software"],
    "Integration": ["pcie"],
    "Hardware": ["memory"],
    "Stress": ["targeted_stress"],
}


def _test(name: str, failing: dict[str, set[int]], skipped: set[str]) -> dict:
    bad = failing.get(name, set())
    results = []
    for gpu in range(GPUS):
        status = "Skip" if name in skipped else ("Fail" if gpu in bad else "Pass")
        result: dict = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu, "status": status}
        if status == "Fail":
            result["warnings"] = [
                {
                    "error_category": 2,
                    "error_id": 18,
                    "error_severity": 2,
                    "warning": f"GPU {gpu}: test {name} found a problem",
                }
            ]
        results.append(result)
    summary = "Skip" if name in skipped else ("Fail" if bad else "Pass")
    return {"name": name, "results": results, "test_summary": {"status": summary}}


def report(
    failing: dict[str, set[int]] | None = None,
    skipped: set[str] | None = None,
    runtime_error: str | None = None,
) -> str:
    """A level-2 report: `failing` maps a test to the GPUs it failed on."""
    diagnostic: dict = {
        "test_categories": [
            {"category": category, "tests": [_test(name, failing or {}, skipped or set()) for name in names]}
            for category, names in LEVEL_2_TESTS.items()
        ]
    }
    if runtime_error is not None:
        diagnostic = {"runtime_error": runtime_error}
    return json.dumps(
        {
            "DCGM Diagnostic": diagnostic,
            "entity_groups": [
                {
                    "entity_group": "GPU",
                    "entity_group_id": 1,
                    "entities": [
                        {"entity_id": gpu, "device_id": "2330", "serial_num": f"165{gpu:010d}"}
                        for gpu in range(GPUS)
                    ],
                }
            ],
            "metadata": {"version": "4.4.2", "Driver Version Detected": "580.105.08"},
        },
        indent=4,
    )

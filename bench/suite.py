"""`make bench-suite`: how long the test suite takes and where the time goes.

Runs pytest with a JUnit report and the arguments after `--` (`make bench-suite` passes
make test's two pytest-xdist workers, the real-Slurm tests on one of them), or reads the
report of an earlier run (`--junit FILE`), and prints: the wall time, the CPU time of
pytest and its children against the machine's idle share while it ran (a suite that waits
on daemons leaves cores idle), the real-Slurm tests' own sum (one worker runs them in
order: the floor of the wall time), the time per test folder and the slowest tests.
Exit 1 when pytest failed or took longer than the target (under ten minutes).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 600
SLURM_PREFIX = "tests.integration."
SLOWEST = 15


@dataclass(frozen=True)
class Case:
    name: str
    folder: str
    seconds: float

    @property
    def slurm(self) -> bool:
        return self.name.startswith(SLURM_PREFIX)


@dataclass(frozen=True)
class Run:
    wall: float
    cpu: float
    idle_share: float
    returncode: int


def read_cases(junit: Path) -> list[Case]:
    """Every test case of a JUnit report; its time is setup, call and teardown together."""
    cases = []
    for case in ET.parse(junit).iter("testcase"):
        classname = case.get("classname", "")
        parts = classname.split(".")
        folder = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
        cases.append(Case(f"{classname}::{case.get('name')}", folder, float(case.get("time") or 0)))
    return cases


def _cpu_times() -> tuple[float, float]:
    """(idle, total) jiffies of the whole machine, from /proc/stat."""
    fields = [float(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def run_suite(junit: Path, pytest_args: list[str]) -> Run:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = usage.ru_utime + usage.ru_stime
    idle_before, total_before = _cpu_times()
    started = time.perf_counter()
    command = [sys.executable, "-m", "pytest", "-q", f"--junitxml={junit}", *pytest_args]
    returncode = subprocess.run(command, cwd=REPO, check=False).returncode
    wall = time.perf_counter() - started
    idle_after, total_after = _cpu_times()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return Run(
        wall=wall,
        cpu=usage.ru_utime + usage.ru_stime - cpu_before,
        idle_share=(idle_after - idle_before) / max(total_after - total_before, 1.0),
        returncode=returncode,
    )


def report(console: Console, cases: list[Case], run: Run | None) -> bool:
    slurm = sum(case.seconds for case in cases if case.slurm)
    rest = sum(case.seconds for case in cases if not case.slurm)
    summary = Table(title=f"{len(cases)} tests", title_justify="left")
    summary.add_column("figure")
    summary.add_column("seconds", justify="right")
    if run is not None:
        summary.add_row("pytest wall time", f"{run.wall:.0f}")
        summary.add_row("CPU time of pytest and its children", f"{run.cpu:.0f}")
        summary.add_row(f"machine idle while it ran ({os.cpu_count()} cores)", f"{run.idle_share:.0%}")
    summary.add_row("real-Slurm tests, summed (one worker runs them in order)", f"{slurm:.0f}")
    summary.add_row("every other test, summed", f"{rest:.0f}")
    console.print(summary)

    folders: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in cases:
        folders[case.folder] += case.seconds
        counts[case.folder] += 1
    by_folder = Table(title="by folder", title_justify="left")
    for column in ("folder", "tests", "seconds"):
        by_folder.add_column(column, justify="left" if column == "folder" else "right")
    for folder, seconds in sorted(folders.items(), key=lambda item: -item[1])[:SLOWEST]:
        by_folder.add_row(folder, str(counts[folder]), f"{seconds:.1f}")
    console.print(by_folder)

    slowest = Table(title=f"{SLOWEST} slowest tests (setup, call and teardown)", title_justify="left")
    slowest.add_column("test", overflow="fold")
    slowest.add_column("seconds", justify="right")
    for case in sorted(cases, key=lambda case: -case.seconds)[:SLOWEST]:
        slowest.add_row(case.name, f"{case.seconds:.1f}")
    console.print(slowest)

    if run is None:
        return True
    ok = run.returncode == 0 and run.wall < TARGET_SECONDS
    verdict = "[green]PASS[/]" if ok else "[bold red]FAIL[/]"
    console.print(f"pytest {run.wall:.0f} s (target < {TARGET_SECONDS} s), exit {run.returncode}: {verdict}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=Path, help="summarize this JUnit report instead of running the suite")
    parser.add_argument(
        "pytest_args", nargs="*", help="arguments for pytest, after -- (make passes its workers)"
    )
    args = parser.parse_args()
    console = Console()
    if args.junit is not None:
        report(console, read_cases(args.junit), None)
        return 0
    with tempfile.TemporaryDirectory(prefix="gpucluster-bench-") as scratch:
        junit = Path(scratch) / "suite.xml"
        run = run_suite(junit, args.pytest_args)
        if not junit.exists():
            console.print(f"[bold red]pytest wrote no report (exit {run.returncode})[/]")
            return 1
        return 0 if report(console, read_cases(junit), run) else 1


if __name__ == "__main__":
    sys.exit(main())

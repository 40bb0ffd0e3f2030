"""`gpucluster scan`: key material and passwords in synthesized templates and rendered files.

What counts as a secret is gpucluster.scan.rules; which files are read, archives and
links included, is gpucluster.scan.files. A path that could not be read fails the scan
as a finding does, with its own fix: it is not a secret, and not clean either.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from gpucluster.progress import progress
from gpucluster.scan.files import Scan, files_under, scan_files, total_size
from gpucluster.tables import print_table, table


def _scan(paths: Sequence[Path]) -> Scan:
    walked = [files_under(path) for path in paths]
    files = [file for found, _ in walked for file in found]
    scan = Scan(unchecked=[item for _, unchecked in walked for item in unchecked])
    with progress(f"scan: {len(files)} files", total_size(files)) as meter:
        scan.add(scan_files(files, meter))
    return scan


def run_scan(paths: Sequence[str | Path]) -> int:
    """`gpucluster scan`: 0 when clean, 1 with findings or unreadable paths, 2 when a path
    does not exist."""
    console = Console(soft_wrap=True)  # each message on one line in a CI log
    missing = [str(p) for p in paths if not Path(p).exists()]
    if missing:
        for path in missing:
            console.print(f"{path}: does not exist; pass a cdk.out or rendered-files directory", markup=False)
        return 2
    scan = _scan([Path(path) for path in paths])
    if not scan.findings and not scan.unchecked:
        clean = f"no key material or passwords in {', '.join(map(str, paths))}"
        console.print(clean, style="green", markup=False, highlight=False)
        return 0
    if scan.findings:
        rows = [(f.file, str(f.line), str(f.kind), f.detail) for f in scan.findings]
        print_table(console, table("secrets found", ("file", "line", "kind", "detail"), rows))
        console.print(
            "[bold red]Move these into Secrets Manager and fetch them at boot; "
            "rotate any credential that was committed or deployed.[/]"
        )
    for item in scan.unchecked:
        console.print(f"{item.file}: {item.problem}; {item.fix}", markup=False, highlight=False)
    if scan.unchecked:
        console.print(
            f"[bold red]{len(scan.unchecked)} path(s) could not be checked: "
            "the scan cannot call this output clean.[/]"
        )
    return 1


if __name__ == "__main__":
    import sys

    sys.exit(run_scan(sys.argv[1:] or ["cdk.out"]))

"""Run every check and print the pass/fail table; exit 0 all pass, 1 one failed."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import AwsError
from gpucluster.config import ClusterConfig
from gpucluster.preflight import account, database, quotas, reservations
from gpucluster.preflight.result import FAIL, PASS, SKIP, Result, guarded
from gpucluster.tables import print_table, table

CHECKS = (
    ("region and AZ", account.zone),
    ("instance types", account.instance_types),
    ("reservations", reservations.reservations),
    ("quotas", quotas.quotas),
    ("AMI", account.image),
    ("CDK bootstrap", account.cdk_bootstrap),
    ("network", account.network),
    ("accounting database", database.database),
)


def _not_run(failure: AwsError | None) -> str:
    """Why the other checks were not run after the credentials check failed."""
    if failure is not None and failure.kind == "network":
        return "not run: AWS cannot be reached (see credentials)"
    return "needs working credentials"


def preflight(cfg: ClusterConfig) -> list[Result]:
    clients = Clients()
    results, failure = guarded("credentials", lambda: account.credentials(clients, cfg))
    if results[0].status != PASS:
        # Every other call would fail the same way: one clear line instead of seven.
        return results + [Result(name, SKIP, _not_run(failure)) for name, _ in CHECKS]
    for name, check in CHECKS:
        results += guarded(name, lambda check=check: check(clients, cfg))[0]  # type: ignore[misc]
    return results


def print_results(out: Console, source: str, results: list[Result]) -> int:
    marks = {PASS: "[green]pass[/green]", FAIL: "[red]FAIL[/red]", SKIP: "[yellow]skip[/yellow]"}
    # AWS messages and ids may hold [brackets]: printed as they are, not read as markup.
    rows = [(marks[r.status], escape(r.check), escape(r.detail), escape(r.fix)) for r in results]
    print_table(out, table(f"preflight {source}", ("", "check", "found", "fix"), rows))
    failures = sum(r.status == FAIL for r in results)
    if failures:
        out.print(f"[red]{failures} check(s) failed[/red]; fix them before `cdk deploy`", highlight=False)
        return 1
    out.print("[green]all checks passed[/green]", highlight=False)
    return 0

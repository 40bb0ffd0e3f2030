"""`gpucluster gate`: logs in, a verdict out (exit 0 GO, 1 NO-GO; bad input raises BadInput)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpucluster.bad_input import BadInput, output_dir, write_failure
from gpucluster.catalog import InstanceType, load_catalog
from gpucluster.command_lines import print_commands
from gpucluster.gate.decide import Context, Verdict, decide_run
from gpucluster.gate.efa_checks import decide_efa_checks
from gpucluster.gate.json_log import looks_like_json, parse_json
from gpucluster.gate.lines import read_text
from gpucluster.gate.pairs import attribute
from gpucluster.gate.report import GateResult, drain_lines, json_report, markdown, reason_lines, summary_table
from gpucluster.gate.thresholds import DEFAULT_MIN_FRACTION
from gpucluster.progress import progress
from gpucluster.tables import print_table

EXIT_GO = 0
EXIT_NO_GO = 1


@dataclass(frozen=True)
class Target:
    """What the logs are judged against: the instance type, and the config's thresholds."""

    instance: InstanceType | None
    min_fraction: float | None = None
    min_busbw: float | None = None
    # The group's `efa` setting; --instance-type alone (or nothing) expects EFA.
    efa: bool = True

    def thresholds(self, min_fraction: float | None, min_busbw: float | None) -> tuple[float, float | None]:
        """The command line's values where given, else the config's, else the defaults."""
        fraction = min_fraction if min_fraction is not None else self.min_fraction
        return (
            fraction if fraction is not None else DEFAULT_MIN_FRACTION,
            min_busbw if min_busbw is not None else self.min_busbw,
        )


def resolve_target(config: Path | None, group: str | None, instance_type: str | None) -> Target:
    """The instance type whose figures apply: from --instance-type or the config's group, with
    the config's `validation.min_fraction` and `validation.min_busbw_gbps`."""
    if instance_type is not None and (config is not None or group is not None):
        raise BadInput.option(
            "--instance-type",
            "is given together with --config/--group",
            "pass either --instance-type or --config with --group",
        )
    if config is None:
        if group is not None:
            raise BadInput.option("--group", "needs --config", "pass the cluster config the group is in")
        return Target(_catalog_type(instance_type) if instance_type is not None else None)
    from gpucluster.config.loader import load_config
    from gpucluster.group_option import chosen_group

    cfg = load_config(config)
    chosen = chosen_group(cfg, config, group)
    return Target(chosen.instance, cfg.validation.min_fraction, cfg.validation.min_busbw_gbps, chosen.efa)


def _catalog_type(name: str) -> InstanceType:
    catalog = load_catalog()
    if name not in catalog:
        raise BadInput.option(
            "--instance-type",
            f"{name} is not in the instance catalog",
            f"pass one of: {', '.join(catalog.names())}, or use --min-busbw",
        )
    return catalog.get(name)


def read_topology(path: Path) -> dict[str, str]:
    """Each node's leaf switch from the cluster's topology.conf (`--topology`)."""
    from gpucluster.agents.ec2_topology import TopologyError, parse_conf

    fix = "pass the head's /etc/slurm/topology.conf or `gpucluster topology render` output"
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(path, "(file)", f"cannot be read ({exc})", fix) from None
    try:
        return parse_conf(text)
    except TopologyError as exc:
        raise BadInput(path, exc.field, exc.what, exc.fix) from None


def judge_log(path: Path, context: Context) -> list[Verdict]:
    text = read_text(path)
    source = str(path)
    if looks_like_json(text):
        return [decide_run(parse_json(source, text), context)]
    from gpucluster.gate.text_log import parse_text

    with progress(f"gate: reading {path.name}", text.count("\n") + 1) as meter:
        runs, checks = parse_text(source, text, meter)
    verdicts = [decide_run(run, context) for run in runs]
    if checks:
        verdicts.append(decide_efa_checks(source, checks))
    return verdicts


def evaluate(logs: list[Path], context: Context, leaves: Mapping[str, str] | None = None) -> GateResult:
    verdicts = [verdict for path in logs for verdict in judge_log(path, context)]
    return GateResult(
        go=bool(verdicts) and all(verdict.go for verdict in verdicts),
        instance_type=context.instance.name if context.instance else None,
        min_fraction=context.min_fraction,
        min_busbw_gbps=context.min_busbw,
        verdicts=tuple(verdicts),
        attribution=attribute(verdicts, leaves),
    )


def write_reports(result: GateResult, directory: Path) -> list[Path]:
    """report.md, report.json and one busbw PNG per run with bandwidth to draw."""
    from gpucluster.gate.plot import plot_name, write_plot

    output_dir(directory, "--report")
    plots: dict[int, str] = {}
    written: list[Path] = []
    try:
        for index, verdict in enumerate(result.verdicts):
            name = plot_name(index, verdict)
            if write_plot(verdict, directory / name):
                plots[index] = name
                written.append(directory / name)
        for name, text in (
            ("report.md", markdown(result, plots)),
            ("report.json", json_report(result, plots)),
        ):
            (directory / name).write_text(text)
            written.append(directory / name)
    except OSError as exc:
        raise write_failure(directory, "--report", exc) from None
    return written


def gate_command(
    console: Console,
    logs: list[Path],
    instance: InstanceType | None,
    min_fraction: float,
    min_busbw: float | None,
    report: Path | None,
    *,
    efa_expected: bool = True,
    leaves: Mapping[str, str] | None = None,
) -> int:
    if report is not None:
        # A bad --report is bad input: say so before a verdict the user would then lose.
        output_dir(report, "--report")
    context = Context(
        instance=instance, min_fraction=min_fraction, min_busbw=min_busbw, efa_expected=efa_expected
    )
    result = evaluate(logs, context, leaves)
    print_table(console, summary_table(result))
    for line in reason_lines(result):
        console.print(line, highlight=False, soft_wrap=True, markup=False)
    drains = drain_lines(result)
    if drains:
        console.print("take the suspect nodes out of scheduling:", highlight=False)
        print_commands(console, drains)
    if report is not None:
        written = write_reports(result, report)
        console.print(f"report written to {report} ({len(written)} files)", highlight=False, markup=False)
    failed = sum(1 for verdict in result.verdicts if not verdict.go)
    summary = "GO" if result.go else f"NO-GO ({failed} of {len(result.verdicts)} runs)"
    console.print(summary, highlight=False, markup=False)
    return EXIT_GO if result.go else EXIT_NO_GO

"""`make bench`: synth time and template size for the default example and a 1024-GPU-node config,
and the gate's parse speed on a large log (bench/gate_parse.py: figures only, no check).

Each synth runs in a fresh Python process, timed from outside, because that is what a
user waits for (`gpucluster synth`, `cdk synth`): interpreter, jsii/Node start-up and
the app. An empty CDK app (build_app's own App and context) synthesized in the same
rounds is the floor no app can beat; rounds interleave the three so machine noise hits
them alike. The children run as an installed gpucluster does: with the bytecode pip
compiles at install (a PYTHONDONTWRITEBYTECODE in the caller's environment is dropped)
and the compiled-template cache, both made by one untimed round first. The run fails
(exit 1) when a CloudFormation limit is missed, the default synth takes more than 2x the
floor, or the 1024-node synth more than 1.2x the default.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO / "examples" / "default.yaml"
MAX_RESOURCES = 500  # CloudFormation resources per stack
MAX_TEMPLATE_BYTES = 1_000_000  # template body uploaded through S3 ("1 MB")
MAX_USER_DATA = 16 * 1024  # EC2, before base64
TARGET_RATIO = 1.2  # large synth time over default synth time
FLOOR_RATIO = 2.0  # default synth time over an empty app's
EMPTY = "empty"
WITH_NAG = "default --nag"  # shown, not checked: what cdk-nag adds (`cdk synth|deploy` run it)
NAG_PREFIX = "nag:"


@dataclass(frozen=True)
class Template:
    stack: str
    resources: int
    size: int


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


def synth_in_child(config: str, outdir: Path) -> None:
    """Runs in the timed child process."""
    from gpucluster.synth.cdk_runtime import use_wheel_node

    use_wheel_node()
    if config == EMPTY:
        from gpucluster.synth.cdk_runtime import cdk_context, new_app

        # build_app's own App and context, without any gpucluster import beyond cdk_runtime:
        # the floor differs from the default synth only by the cluster.
        new_app(str(outdir), cdk_context()).synth()
        return
    from gpucluster.config.loader import load_config
    from gpucluster.synth.app import synthesize

    nag = config.startswith(NAG_PREFIX)
    synthesize(load_config(config.removeprefix(NAG_PREFIX)), outdir, nag=nag)


@dataclass(frozen=True)
class Sample:
    wall: float
    cpu: float


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_synth(config: str, outdir: Path) -> Sample:
    """Wall and CPU seconds of one synth; CPU includes the Node process jsii starts."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    cpu, started = _children_cpu(), time.perf_counter()
    subprocess.run(
        [sys.executable, __file__, "--child", config, str(outdir)],
        check=True,
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    return Sample(time.perf_counter() - started, _children_cpu() - cpu)


def templates_in(outdir: Path) -> list[Template]:
    found = []
    for path in sorted(outdir.glob("*.template.json")):
        body = json.loads(path.read_text())
        found.append(
            Template(
                path.name.removesuffix(".template.json"), len(body.get("Resources", {})), path.stat().st_size
            )
        )
    return found


def report(
    console: Console, samples: dict[str, list[Sample]], outputs: dict[str, Path], configs: dict[str, Path]
) -> list[Check]:
    from gpucluster.config.loader import load_config
    from gpucluster.synth.app import rendered
    from gpucluster.synth.summary import user_data_sizes

    checks: list[Check] = []
    wall = {name: statistics.median(s.wall for s in runs) for name, runs in samples.items()}
    cpu = {name: statistics.median(s.cpu for s in runs) for name, runs in samples.items()}
    runs = len(samples[EMPTY])
    timing = Table(title=f"synth time of a fresh process, median of {runs}", title_justify="left")
    for column in ("config", "wall s", "x empty app", "cpu s", "x empty app "):
        timing.add_column(column, justify="left" if column == "config" else "right")
    for name in samples:
        timing.add_row(
            name,
            f"{wall[name]:.2f}",
            f"{wall[name] / wall[EMPTY]:.2f}",
            f"{cpu[name]:.2f}",
            f"{cpu[name] / cpu[EMPTY]:.2f}",
        )
    console.print(timing)
    for name, outdir in outputs.items():
        table = Table(title=f"{name}: templates", title_justify="left")
        for column in ("stack", "resources", "bytes"):
            table.add_column(column, justify="left" if column == "stack" else "right")
        for template in templates_in(outdir):
            table.add_row(template.stack, str(template.resources), f"{template.size:,}")
            checks.append(
                Check(
                    f"{name} {template.stack} < {MAX_RESOURCES} resources",
                    template.resources < MAX_RESOURCES,
                    str(template.resources),
                )
            )
            checks.append(
                Check(
                    f"{name} {template.stack} < {MAX_TEMPLATE_BYTES:,} bytes",
                    template.size < MAX_TEMPLATE_BYTES,
                    f"{template.size:,}",
                )
            )
        console.print(table)
        cfg = load_config(configs[name])
        sizes = user_data_sizes(rendered(cfg)[1], cfg.account, cfg.region)
        table = Table(title=f"{name}: user-data bytes per role", title_justify="left")
        table.add_column("role")
        table.add_column("bytes", justify="right")
        for role, size in sizes.items():
            table.add_row(role, f"{size:,}")
        console.print(table)
        largest = max(sizes.values())
        checks.append(
            Check(
                f"{name} user-data < {MAX_USER_DATA:,} bytes", largest < MAX_USER_DATA, f"largest {largest:,}"
            )
        )
    # CPU time decides: on a shared machine wall time mostly measures the neighbours.
    floor = cpu["default"] / cpu[EMPTY]
    console.print(
        f"default synth {cpu['default']:.2f} s cpu ({wall['default']:.2f} s wall), "
        f"empty-app floor {cpu[EMPTY]:.2f} s cpu ({wall[EMPTY]:.2f} s wall), "
        f"ratio {floor:.2f} (wall {wall['default'] / wall[EMPTY]:.2f}), target <= {FLOOR_RATIO}"
    )
    checks.append(
        Check(
            f"default / empty-app synth cpu time <= {FLOOR_RATIO}",
            floor <= FLOOR_RATIO,
            f"{floor:.2f} (wall {wall['default'] / wall[EMPTY]:.2f})",
        )
    )
    ratio = cpu["large"] / cpu["default"]
    checks.append(
        Check(
            f"large / default synth cpu time <= {TARGET_RATIO}",
            ratio <= TARGET_RATIO,
            f"{ratio:.2f} (wall {wall['large'] / wall['default']:.2f})",
        )
    )
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="synths per config (median is reported)")
    parser.add_argument("--gate-mb", type=int, default=250, help="size of the gate's log in MB")
    parser.add_argument("--gate-runs", type=int, default=3, help="gate parses (median is reported)")
    parser.add_argument("--only", choices=("synth", "gate"), help="run one of the two benchmarks")
    parser.add_argument("--child", nargs=2, metavar=("CONFIG", "OUTDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        synth_in_child(args.child[0], Path(args.child[1]))
        return 0

    console = Console()
    if args.only != "synth":
        from bench.gate_parse import time_gate_parse

        with tempfile.TemporaryDirectory(prefix="gpucluster-bench-") as scratch:
            time_gate_parse(console, Path(scratch), args.gate_mb, args.gate_runs)
    if args.only == "gate":
        return 0
    from bench.large_config import large_config
    from gpucluster.config import ClusterConfig

    with tempfile.TemporaryDirectory(prefix="gpucluster-bench-") as scratch:
        work = Path(scratch)
        large = large_config(yaml.safe_load(DEFAULT.read_text()))
        cfg = ClusterConfig.model_validate(large)
        nodes = sum(group.count for group in cfg.compute_groups)
        gpus = sum(group.count * group.instance.gpu_count for group in cfg.compute_groups)
        large_path = work / "large.yaml"
        large_path.write_text(yaml.safe_dump(large, sort_keys=False))
        configs = {"default": DEFAULT, "large": large_path}
        console.print(f"large config: {len(cfg.compute_groups)} groups, {nodes} GPU nodes, {gpus} GPUs")

        samples: dict[str, list[Sample]] = {EMPTY: [], "default": [], WITH_NAG: [], "large": []}
        targets = {EMPTY: EMPTY, WITH_NAG: f"{NAG_PREFIX}{DEFAULT}"}
        targets |= {name: str(path) for name, path in configs.items()}
        outputs = {name: work / name for name in configs}
        outdirs = {name: work / name.replace(" --", "-").replace(" ", "-") for name in samples}
        for name in samples:
            timed_synth(targets[name], outdirs[name])  # the warm-up round
        for _ in range(args.runs):
            for name in samples:
                samples[name].append(timed_synth(targets[name], outdirs[name]))
        checks = report(console, samples, outputs, configs)

    table = Table(title="checks", title_justify="left")
    for column in ("check", "value", "result"):
        table.add_column(column)
    for check in checks:
        table.add_row(check.name, check.detail, "[green]PASS[/]" if check.ok else "[bold red]FAIL[/]")
    console.print(table)
    failed = [check for check in checks if not check.ok]
    if failed:
        console.print(f"[bold red]{len(failed)} check(s) failed[/]")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

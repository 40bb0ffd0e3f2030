"""The boot budget (gpucluster.bootstrap.boot_budget): every wait of the bootstrap is drawn from it,
the compute launch hook's HeartbeatTimeout is derived from it, and the node's heartbeat
loop runs, stops with the bootstrap and never fails it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gpucluster.bootstrap import boot_budget
from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.config.loader import load_config
from gpucluster.resolved import resolve
from tests.conftest import resources_of
from tests.shell_downloads import with_fixture_checksums
from tests.shell_harness import ASG_NAME, INSTANCE_ID, Node
from tests.stacks.stack_templates import asg_for, stack

REPO = Path(__file__).resolve().parents[2]

# A command or option that waits or bounds a wait, and the argument that says how long.
# (nc's -w is its connect timeout; test(1)'s -w is not a wait.)
WAIT_ARGUMENT = re.compile(
    r"(?:^|[\s;(|&])(sleep|retry|poll_until|timeout|--wait|--retry|--max-time|--connect-timeout|nc\s.*?-w)"
    r"\s+(\"[^\"]*\"|\$\(\([^)]*\)\)|\S+)"
    r"|(Lock::Timeout)=(\"[^\"]*\"|\S+)"
)
# A loop counter compared with its limit: ((waited >= LIMIT)) or ((waited < LIMIT)).
LOOP_LIMIT = re.compile(r"\(\(\s*waited\s*(?:>=|<)\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\)")
LOOP_START = re.compile(r"^\s*(while|until|for)\b")


# lib/common.sh's helpers that wait by a budget name their callers pass (retry NAME,
# poll_until NAME_TIMEOUT): the callers' names are checked, the helpers' bodies are not.
BUDGET_HELPERS = re.compile(r"^(poll_until)\(\) \{$")


def code_lines(text: str) -> list[str]:
    """Shell lines without comments (a '#' that starts a word starts a comment), with the
    bodies of BUDGET_HELPERS blanked."""
    lines = []
    in_helper = False
    for line in text.splitlines():
        in_helper = in_helper or bool(BUDGET_HELPERS.match(line))
        if in_helper:
            lines.append("")
            in_helper = line != "}"
            continue
        lines.append(re.sub(r"(^|\s)#.*$", "", line) if not line.startswith("#!") else "")
    return lines


def bundle_scripts() -> dict[str, str]:
    cfg = load_config(REPO / "examples" / "default.yaml")
    return {
        path: text
        for path, text in bundle_files(resolve(cfg)).items()
        if path.endswith(".sh") and not path.startswith("files/")
    }


def names_in(argument: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", argument))


def wait_problems(scripts: dict[str, str], budget: set[str] | None = None) -> list[str]:
    """Every wait whose length is a literal or a name the budget does not define."""
    budget = budget if budget is not None else set(boot_budget.shell_values())
    problems = []
    for path, text in scripts.items():
        for number, line in enumerate(code_lines(text), start=1):
            for match in WAIT_ARGUMENT.finditer(line):
                argument = match.group(2) or match.group(4)
                if match.group(1) == "retry" and not re.fullmatch(r"[A-Z][A-Z_]*", argument):
                    problems.append(f"{path}:{number}: retry takes a budget name {line.strip()!r}")
                    continue
                if match.group(1) == "poll_until" and not (
                    argument.endswith("_TIMEOUT")
                    and {argument, argument[: -len("_TIMEOUT")] + "_POLL"} <= budget
                ):
                    problems.append(f"{path}:{number}: poll_until takes a budget wait name {line.strip()!r}")
                    continue
                used = names_in(argument) - {"attempt", "waited", "beat"}
                if re.search(r"(?<![A-Za-z_])\d", argument):
                    problems.append(f"{path}:{number}: literal wait {line.strip()!r}")
                elif not used & budget:
                    problems.append(f"{path}:{number}: wait not from the budget {line.strip()!r}")
    return problems


def unbounded_polls(scripts: dict[str, str], budget: set[str] | None = None) -> list[str]:
    """Loops that sleep but neither compare their counter with a budget limit nor count
    over a list the budget renders."""
    budget = budget if budget is not None else set(boot_budget.shell_values())
    problems = []
    for path, text in scripts.items():
        lines = code_lines(text)
        for number, line in enumerate(lines):
            if not LOOP_START.match(line) or line.strip().startswith("for ((attempt"):
                continue
            body = []
            for following in lines[number:]:
                body.append(following)
                if re.match(r"^\s*done\b", following):
                    break
            block = "\n".join(body)
            if not re.search(r"\bsleep\b", block):
                continue
            limits = set(LOOP_LIMIT.findall(block)) | set(re.findall(r"<=\s*([A-Z_]+)", block))
            if line.strip().startswith("for "):
                limits |= names_in(line)
            if not limits & budget:
                problems.append(f"{path}:{number + 1}: polling loop without a budget limit")
    return problems


def test_every_wait_in_the_bundle_comes_from_the_budget() -> None:
    scripts = bundle_scripts()
    assert "conf/cluster.sh" in scripts and "lib/heartbeat.sh" in scripts
    assert wait_problems(scripts) == []
    assert unbounded_polls(scripts) == []


def test_the_user_data_retries_come_from_the_budget() -> None:
    # The thin user data sources no config: its template renders the budget's numbers.
    template = (REPO / "templates/userdata/thin.sh.j2").read_text()
    rendered_names = {"retry_backoff", "attempts"}
    assert "sleep $((attempt * {{ retry_backoff }}))" in template
    assert wait_problems({"thin.sh.j2": template}, rendered_names) == []
    assert unbounded_polls({"thin.sh.j2": template}, rendered_names) == []
    literal = template.replace("{{ retry_backoff }}", "5")
    assert wait_problems({"thin.sh.j2": literal}, rendered_names) != []
    assert unbounded_polls({"thin.sh.j2": literal.replace("{{ attempts }}", "1 2 3")}, rendered_names)


def test_a_new_literal_wait_fails_the_scan() -> None:
    scripts = bundle_scripts()
    added = {
        "lib/new.sh": "wait_for_thing() {\n  local waited=0\n  until thing; do\n    sleep 7\n  done\n}\n",
        "lib/new2.sh": 'fetch() { retry 4 curl -o x "$1"; }\n',
        "lib/new3.sh": 'fetch() { timeout "${SOME_SECONDS}" aws s3 cp a b; }\n',
        "lib/new4.sh": 'fetch() { retry "${PACKAGE_RETRIES}" curl -o x "$1"; }\n',
        "lib/new5.sh": 'wait_for_thing() { poll_until 30 "" thing || die "no thing"; }\n',
        "lib/new6.sh": 'wait_for_thing() { poll_until PACKAGE_RETRIES "" thing || die "no thing"; }\n',
    }
    problems = wait_problems({**scripts, **added})
    assert [p.split(":")[0] for p in problems] == [
        "lib/new.sh",
        "lib/new2.sh",
        "lib/new3.sh",
        "lib/new4.sh",
        "lib/new5.sh",
        "lib/new6.sh",
    ]
    assert unbounded_polls({**scripts, **added}) == ["lib/new.sh:3: polling loop without a budget limit"]


def test_the_rendered_conf_defines_every_budget_value() -> None:
    conf = bundle_scripts()["conf/cluster.sh"]
    for name, value in boot_budget.shell_values().items():
        assert f"readonly {name}={value}\n" in conf


def test_the_budget_covers_the_compute_waits_and_stays_within_auto_scaling_limits() -> None:
    compute = boot_budget.boot_budget("compute")
    # The long waits alone were about 3,000 s, more than the old 2,400 s hook.
    long_waits = sum(poll.timeout for poll in boot_budget.POLLS if "compute" in poll.roles)
    # apt, NVMe, the head's Slurm package, slurmctld, Fabric Manager, nv-hostengine, slurmd
    assert long_waits == 1200 + 600 + 1800 + 900 + 120 + 60 + 300
    assert compute > long_waits + boot_budget.WORK_ALLOWANCE + boot_budget.DCGM_JOIN_ALLOWANCE
    # DCGM's level 2, the longest a node runs before joining, within its bound.
    assert boot_budget.DCGM_JOIN_ALLOWANCE == 900
    timeout = boot_budget.heartbeat_timeout()
    assert timeout == min(compute + boot_budget.MARGIN, 7200)
    assert 30 <= timeout <= 7200
    assert boot_budget.global_timeout() == min(172800, 100 * timeout)
    beats = boot_budget.heartbeat_beats()
    assert beats * boot_budget.HEARTBEAT_INTERVAL <= compute < (beats + 1) * boot_budget.HEARTBEAT_INTERVAL
    assert timeout > boot_budget.HEARTBEAT_INTERVAL


def test_only_the_head_budgets_the_slurm_build_and_the_others_wait_for_it() -> None:
    package = next(poll for poll in boot_budget.POLLS if poll.name == "SLURM_PACKAGE_TIMEOUT")
    assert package.roles == ("login", "compute")
    assert package.timeout > boot_budget.SLURM_BUILD_ALLOWANCE
    head = boot_budget.boot_budget("head")
    without_build = head - boot_budget.SLURM_BUILD_ALLOWANCE
    assert (
        without_build
        == sum(p.worst_case for p in boot_budget.POLLS if "head" in p.roles)
        + sum(r.worst_case("head") for r in boot_budget.RETRIES)
        + boot_budget.WORK_ALLOWANCE
    )


def test_the_hook_heartbeat_timeout_in_the_template_is_the_derived_one(synthesized, example_configs):
    expected = boot_budget.heartbeat_timeout()
    seen = 0
    for example, cfg in example_configs.items():
        cluster = stack(synthesized, example, "cluster")
        for group in cfg.compute_groups:
            hooks = asg_for(cluster, group.name)["LifecycleHookSpecificationList"]
            assert [hook["HeartbeatTimeout"] for hook in hooks] == [expected]
            # Counted from InService, after the hook: the hook covers the boot.
            assert asg_for(cluster, group.name)["HealthCheckGracePeriod"] == 0
            seen += 1
    assert seen > 0


def test_compute_nodes_may_send_heartbeats_only_to_their_cluster_groups(synthesized):
    cluster = stack(synthesized, "default", "cluster")
    statements = [
        statement
        for role in resources_of(cluster, "AWS::IAM::Role").values()
        for policy in role["Properties"].get("Policies", [])
        for statement in policy["PolicyDocument"]["Statement"]
        if "autoscaling:RecordLifecycleActionHeartbeat" in statement["Action"]
    ]
    assert len(statements) == 1
    assert "autoscaling:CompleteLifecycleAction" in statements[0]["Action"]
    assert "aws:ResourceTag/gpucluster:cluster" in str(statements[0]["Condition"])


# Runs the heartbeat loop alone, as the bootstrap starts it, and waits for it to end.
LOOP_ONLY = """#!/bin/bash
set -Eeuo pipefail
BUNDLE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly R="${GPUCLUSTER_ROOT:-}"
ROLE=compute
source "${BUNDLE_DIR}/conf/cluster.sh"
source "${BUNDLE_DIR}/lib/common.sh"
source "${BUNDLE_DIR}/lib/failure.sh"
source "${BUNDLE_DIR}/lib/heartbeat.sh"
start_heartbeat
wait "${HEARTBEAT_PID}"
echo "loop ended"
"""


def loop_node(tmp_path: Path, **env: str) -> Node:
    cfg = with_fixture_checksums(load_config(REPO / "examples" / "default.yaml"))
    node = Node(tmp_path, cfg, env=env)
    script = node.bundle / "bin" / "heartbeat-loop.sh"
    script.write_text(LOOP_ONLY)
    script.chmod(0o755)
    return node


def heartbeats(calls: list[str]) -> list[str]:
    return [call for call in calls if "record-lifecycle-action-heartbeat" in call]


def test_the_loop_sends_one_heartbeat_per_interval_for_the_budget_then_stops(tmp_path: Path) -> None:
    run = loop_node(tmp_path).run_script("bin/heartbeat-loop.sh")
    assert run.returncode == 0, run.output
    sent = heartbeats(run.calls)
    assert len(sent) == boot_budget.heartbeat_beats()
    assert all(
        f"--auto-scaling-group-name {ASG_NAME}" in call
        and f"--instance-id {INSTANCE_ID}" in call
        and "--lifecycle-hook-name gpucluster-launch" in call
        for call in sent
    )
    sleeps = [call for call in run.calls if call == f"sleep {boot_budget.HEARTBEAT_INTERVAL}"]
    assert len(sleeps) == len(sent)
    assert f"boot budget of {boot_budget.boot_budget('compute')} s spent" in run.output
    assert "loop ended" in run.output


def test_a_failed_heartbeat_is_logged_and_the_loop_goes_on(tmp_path: Path) -> None:
    run = loop_node(tmp_path, SIM_HEARTBEAT_FAIL="1").run_script("bin/heartbeat-loop.sh")
    assert run.returncode == 0, run.output
    assert len(heartbeats(run.calls)) == boot_budget.heartbeat_beats()
    assert run.output.count("WARNING: lifecycle heartbeat") == boot_budget.heartbeat_beats()
    assert "ABANDON" not in "\n".join(run.calls)


@pytest.mark.parametrize("fail", ["", "1"])
def test_the_boot_completes_and_stops_the_loop_even_when_heartbeats_fail(tmp_path: Path, fail) -> None:
    # Each heartbeat interval really sleeps 60 s: the boot must end long before that, so
    # the bootstrap has to kill the loop and its sleep (else the output pipe stays open).
    interval = str(boot_budget.HEARTBEAT_INTERVAL)
    node = loop_node(
        tmp_path, SIM_REAL_SLEEP_FOR=interval, SIM_REAL_SLEEP_SECONDS="60", SIM_HEARTBEAT_FAIL=fail
    )
    started = time.monotonic()
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert time.monotonic() - started < 50
    assert "--lifecycle-action-result CONTINUE" in "\n".join(run.calls)
    assert "lifecycle heartbeats every" in run.output
    assert "lifecycle heartbeats stopped" in run.output
    started_at = run.output.index("lifecycle heartbeats every")
    assert started_at < run.output.index("step wait_for_apt_locks")
    assert heartbeats(run.calls) == []


def test_a_failed_boot_stops_the_loop_and_abandons(tmp_path: Path) -> None:
    interval = str(boot_budget.HEARTBEAT_INTERVAL)
    node = loop_node(
        tmp_path, SIM_REAL_SLEEP_FOR=interval, SIM_REAL_SLEEP_SECONDS="60", SIM_CONTROLLER_DOWN="1"
    )
    started = time.monotonic()
    run = node.run("compute", "gpu")
    assert run.returncode != 0
    assert time.monotonic() - started < 50
    assert "lifecycle heartbeats stopped" in run.output
    assert "--lifecycle-action-result ABANDON" in "\n".join(run.calls)


def retries_of_a_boot(tmp_path: Path, role: str) -> dict[str, int]:
    """How often a successful boot of `role` calls `retry` with each budget name."""
    cfg = with_fixture_checksums(load_config(REPO / "examples" / "default.yaml"))
    node = Node(tmp_path, cfg)
    common = node.bundle / "lib" / "common.sh"
    original = '  local attempts="${!1}" attempt\n'
    text = common.read_text()
    assert original in text
    common.write_text(text.replace(original, original + '  echo "$1" >>"$SIM_STATE/retries"\n'))
    run = node.run(role, "gpu" if role == "compute" else None)
    assert run.returncode == 0, run.output
    counts: dict[str, int] = {}
    for name in (node.state / "retries").read_text().split():
        counts[name] = counts.get(name, 0) + 1
    return counts


@pytest.mark.parametrize("role", boot_budget.ROLES)
def test_the_budget_counts_every_retried_call_of_a_boot(tmp_path: Path, role: str) -> None:
    counted = {retry.name: retry.calls.get(role, 0) for retry in boot_budget.RETRIES}
    seen = retries_of_a_boot(tmp_path, role)
    assert seen, "the instrumented retry was never called"
    for name, calls in seen.items():
        assert name in counted, f"{name} is not a boot retry of the budget"
        assert calls <= counted[name], (
            f"{role}: {name} is called {calls} times, budget counts {counted[name]}"
        )


def test_a_node_that_cannot_find_its_group_boots_without_heartbeats(tmp_path: Path) -> None:
    node = loop_node(tmp_path, SIM_ASG="None")
    run = node.run("compute", "gpu")
    assert run.returncode == 0, run.output
    assert "cannot find this instance's Auto Scaling group; no lifecycle heartbeats" in run.output
    assert heartbeats(run.calls) == []
    assert "systemctl start slurmd" in run.calls


def test_retry_with_a_value_instead_of_a_name_fails_loudly(tmp_path: Path) -> None:
    node = loop_node(tmp_path)
    script = node.bundle / "bin" / "retry-value.sh"
    script.write_text(LOOP_ONLY.split("start_heartbeat")[0] + "retry 3 true\necho not reached\n")
    script.chmod(0o755)
    run = node.run_script("bin/retry-value.sh")
    assert run.returncode != 0
    assert "retry: '3' is not the name of an attempt count" in run.output
    assert "not reached" not in run.output

"""`gpucluster plan`: the layout arithmetic (ranks, nodes, GPUs per node, global batch), each
refusal naming its option, and the command's output and exit codes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner, Result

from gpucluster.bad_input import COMMAND_LINE, BadInput
from gpucluster.cli import app
from gpucluster.config.loader import load_config
from gpucluster.plan import Layout, PlanRefusal, plan_layout
from gpucluster.plan.group import plan_group
from tests.conftest import REPO
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh

CAPACITY_BLOCK = REPO / "examples" / "p5en-capacity-block.yaml"  # 4 x p5en.48xlarge (8 GPUs)
MIXED = REPO / "examples" / "mixed.yaml"


def layout(
    tp: int = 1, pp: int = 1, dp: int = 1, ep: int = 1, cp: int = 1, micro: int = 1, accum: int = 1
) -> Layout:
    return Layout(tp=tp, pp=pp, dp=dp, ep=ep, cp=cp, micro_batch=micro, accum=accum)


def test_the_seed_example_is_64_ranks_and_a_global_batch_of_64() -> None:
    # TP8 x PP4 x DP2 = 64 ranks; global batch 1 x 32 x 2 = 64, not 2048 (times TP and PP again).
    plan = plan_layout(layout(tp=8, pp=4, dp=2, micro=1, accum=32), gpus_per_node=8, nodes_available=8)
    assert plan.ranks == 64
    assert plan.nodes == 8 and plan.gpus_per_node_used == 8
    assert plan.global_batch == 64


@pytest.mark.parametrize(
    ("sizes", "ranks", "nodes", "used", "batch"),
    [
        (dict(tp=1, pp=1, dp=8, micro=4, accum=2), 8, 1, 8, 64),
        (dict(tp=2, pp=1, dp=2, micro=4, accum=1), 4, 1, 4, 8),  # part of one node
        (dict(tp=4, pp=2, dp=4, micro=2, accum=8), 32, 4, 8, 64),
        (dict(tp=2, pp=2, dp=4, cp=2, micro=1, accum=4), 32, 4, 8, 16),  # CP adds ranks, not samples
        (dict(tp=2, pp=1, dp=16, ep=4, micro=1, accum=1), 32, 4, 8, 16),  # EP adds neither
        (dict(tp=1, pp=1, dp=1, micro=3, accum=5), 1, 1, 1, 15),
    ],
)
def test_arithmetic(sizes: dict[str, int], ranks: int, nodes: int, used: int, batch: int) -> None:
    plan = plan_layout(layout(**sizes), gpus_per_node=8, nodes_available=4)
    assert (plan.ranks, plan.nodes, plan.gpus_per_node_used, plan.global_batch) == (ranks, nodes, used, batch)


@pytest.mark.parametrize(
    ("sizes", "option", "words"),
    [
        (dict(tp=16, dp=1), "--tp", "TP16 is larger than a node's 8 GPUs"),
        (dict(tp=3, dp=8), "--tp", "TP3 does not divide a node's 8 GPUs"),
        (dict(tp=2, dp=10), "--dp", "20 ranks do not fill whole nodes of 8 GPUs (2.50 nodes)"),
        (dict(tp=4, dp=3), "--dp", "12 ranks do not fill whole nodes"),
        (dict(tp=2, dp=16, ep=8), "--ep", "EP group spans TP2 x CP1 x EP8 = 16 GPUs, which crosses a node"),
        (dict(tp=4, cp=2, dp=4, ep=2), "--ep", "TP4 x CP2 x EP2 = 16 GPUs"),
        (dict(tp=1, dp=6, ep=4), "--ep", "EP4 does not divide DP6"),
        (dict(tp=8, pp=4, dp=2), "--dp", "64 ranks need 8 nodes of 8 GPUs; the group has 4"),
    ],
)
def test_refusals_name_the_option(sizes: dict[str, int], option: str, words: str) -> None:
    with pytest.raises(PlanRefusal) as info:
        plan_layout(layout(**sizes), gpus_per_node=8, nodes_available=4)
    assert info.value.option == option
    assert words in info.value.what, info.value.what
    assert info.value.fix


def test_a_layout_that_does_not_fill_nodes_gets_a_dp_that_does() -> None:
    with pytest.raises(PlanRefusal) as info:
        plan_layout(layout(tp=4, dp=3), gpus_per_node=8, nodes_available=4)
    assert info.value.fix.endswith("e.g. --dp 4")


def test_expert_parallel_within_a_node_is_accepted_at_the_boundary() -> None:
    plan = plan_layout(layout(tp=2, dp=8, ep=4), gpus_per_node=8, nodes_available=4)
    assert plan.nodes == 2 and plan.ranks == 16


@pytest.mark.parametrize("option", ["--tp", "--pp", "--dp", "--ep", "--cp", "--micro-batch", "--accum"])
def test_sizes_below_one_are_refused(option: str) -> None:
    sizes = {"tp": 1, "pp": 1, "dp": 1, "ep": 1, "cp": 1, "micro_batch": 1, "accum": 1}
    sizes[option.lstrip("-").replace("-", "_")] = 0
    with pytest.raises(PlanRefusal) as info:
        Layout(**sizes)
    assert info.value.option == option


def test_a_capacity_block_group_counts_the_blocks_instances() -> None:
    cfg = load_config(CAPACITY_BLOCK)
    result = plan_group(cfg, CAPACITY_BLOCK, "h200", layout(tp=8, dp=4, micro=2, accum=4))
    assert result.plan.nodes == 4 and result.plan.nodes_available == 4
    assert "Capacity Block cr-0f1e2d3c4b5a69788" in dict(result.rows())["nodes"]
    with pytest.raises(BadInput) as info:
        plan_group(cfg, CAPACITY_BLOCK, "h200", layout(tp=8, dp=8))
    (problem,) = info.value.problems
    assert info.value.source == COMMAND_LINE
    assert problem.startswith("--dp: group h200: TP8 x PP1 x DP8 = 64 ranks need 8 nodes")
    assert "(Capacity Block cr-0f1e2d3c4b5a69788)" in problem


def test_groups_are_found_by_name() -> None:
    cfg = load_config(MIXED)
    with pytest.raises(
        BadInput, match=r"--group: .*mixed.yaml has 3 compute groups; pass one of: train, dev, eval"
    ):
        plan_group(cfg, MIXED, None, layout())
    with pytest.raises(BadInput, match=r"--group: .*mixed.yaml has no compute group 'nope'"):
        plan_group(cfg, MIXED, "nope", layout())


def run(*args: str) -> Result:
    return CliRunner().invoke(app, ["plan", *args])


def test_plan_prints_ranks_nodes_gpus_and_global_batch() -> None:
    args = ["--config", str(CAPACITY_BLOCK), "--group", "h200", "--tp", "8", "--pp", "2", "--dp", "2"]
    result = run(*args, "--micro-batch", "1", "--accum", "32")
    assert result.exit_code == 0, result.output
    rows = {
        line.split("│")[1].strip(): line.split("│")[2].strip()
        for line in result.output.splitlines()
        if line.count("│") == 3
    }
    assert rows["ranks"] == "32"
    assert rows["nodes"] == "4 of 4 (Capacity Block cr-0f1e2d3c4b5a69788)"
    assert rows["GPUs per node used"] == "8 of 8"
    assert rows["global batch"] == "64 = micro-batch 1 x accumulation 32 x DP 2"
    assert rows["submit"] == "sbatch --nodes=4 /opt/gpucluster/jobs/h200/torchrun.sbatch"


def test_plan_on_part_of_a_node_sets_the_processes_per_node() -> None:
    args = ["--config", str(CAPACITY_BLOCK), "--tp", "2", "--pp", "1", "--dp", "2"]
    result = run(*args, "--micro-batch", "4", "--accum", "1")
    assert result.exit_code == 0, result.output
    assert "4 of 8" in result.output
    assert (
        "TRAIN_NPROC_PER_NODE=4 sbatch --nodes=1 /opt/gpucluster/jobs/h200/torchrun.sbatch" in result.output
    )


def test_the_submit_line_piped_to_sh_submits_the_job(tmp_path: Path) -> None:
    args = ["--config", str(CAPACITY_BLOCK), "--tp", "2", "--pp", "1", "--dp", "2"]
    result = run(*args, "--micro-batch", "4", "--accum", "1")
    assert result.exit_code == 0, result.output
    (submit,) = [line.split("│")[2].strip() for line in result.output.splitlines() if "│ submit" in line]
    shell = pipe_to_sh(submit, ["sbatch"], tmp_path, watched_env=["TRAIN_NPROC_PER_NODE"])
    assert (shell.returncode, shell.strays) == (0, [])
    assert [(call.argv, call.env) for call in shell.calls] == [
        (["--nodes=1", "/opt/gpucluster/jobs/h200/torchrun.sbatch"], {"TRAIN_NPROC_PER_NODE": "4"})
    ]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_group_name_a_shell_would_read_is_refused_before_any_command(tmp_path: Path, name: str) -> None:
    # The group name goes into the submit line's job path; the config admits only plain names.
    data = yaml.safe_load(CAPACITY_BLOCK.read_text())
    data["compute_groups"][0]["name"] = name
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run(
        "--config", str(config), "--tp", "8", "--pp", "1", "--dp", "1", "--micro-batch", "1", "--accum", "1"
    )
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert f"error {config}: compute_groups.0.name: " in result.stderr
    assert "is not a usable group name" in result.stderr


@pytest.mark.parametrize(
    ("extra", "option"),
    [
        (["--tp", "16", "--dp", "1"], "--tp"),
        (["--tp", "2", "--dp", "10"], "--dp"),
        (["--tp", "2", "--dp", "16", "--ep", "8"], "--ep"),
        (["--tp", "8", "--dp", "8"], "--dp"),
    ],
)
def test_plan_refusals_exit_2_with_one_line_naming_the_option(extra: list[str], option: str) -> None:
    result = run("--config", str(CAPACITY_BLOCK), "--pp", "1", "--micro-batch", "1", "--accum", "1", *extra)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error gpucluster plan: {option}: group h200: ")
    assert "Traceback" not in result.output


def test_plan_usage_errors_exit_2() -> None:
    result = run(
        "--config",
        str(CAPACITY_BLOCK),
        "--tp",
        "0",
        "--pp",
        "1",
        "--dp",
        "1",
        "--micro-batch",
        "1",
        "--accum",
        "1",
    )
    assert result.exit_code == 2
    assert result.output.startswith("error gpucluster plan: ")
    missing = run("--config", str(CAPACITY_BLOCK), "--tp", "1")
    assert missing.exit_code == 2 and missing.output.startswith("error gpucluster plan: --pp: is required;")
    assert run("-h").exit_code == 0

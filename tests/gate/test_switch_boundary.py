"""The gate with the cluster's topology (`--topology`): each suspect names its leaf switch,
and a bandwidth drop that follows a switch boundary is reported as the boundary's, not a
node's (gpucluster.gate.pairs)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from gpucluster.agents.ec2_topology import build, parse_response, render_conf
from gpucluster.catalog import load_catalog
from gpucluster.cli import app
from gpucluster.gate.decide import Context
from gpucluster.gate.run import evaluate
from gpucluster.job_output import pair_line
from tests.nccl_logs import Spec, text_log

P5 = "p5.48xlarge"
LEAVES = {"gpu-1": "nn-leaf-a", "gpu-2": "nn-leaf-a", "gpu-3": "nn-leaf-b", "gpu-4": "nn-leaf-b"}


def _logs(tmp_path: Path, rounds, slow, *, switches: bool = False) -> list[Path]:
    """One log per pair; with `switches`, its pair line names the nodes' leaves as the
    pairwise job prints them."""
    paths = []
    for number, pairs in enumerate(rounds, start=1):
        for first, second in pairs:
            spec = Spec(
                hosts=(first, second),
                pair=(number, first, second),
                peak_busbw=150.0 if slow(first, second) else 470.0,
            )
            path = tmp_path / f"pair-r{number}-{first}-{second}.out"
            text = text_log(spec)
            if switches:
                plain = pair_line(number, first, second)
                text = text.replace(
                    plain, pair_line(number, first, second, (LEAVES[first], LEAVES[second])), 1
                )
                assert "switches=" in text
            path.write_text(text)
            paths.append(path)
    return paths


def _across(first: str, second: str) -> bool:
    return LEAVES[first] != LEAVES[second]


# Every pair of both rounds crosses the two leaves.
ACROSS = [[("gpu-1", "gpu-3"), ("gpu-2", "gpu-4")], [("gpu-1", "gpu-4"), ("gpu-2", "gpu-3")]]
CONTEXT = Context(load_catalog().get(P5), 0.8, None)


def test_a_drop_across_a_switch_boundary_names_the_boundary_not_the_nodes(tmp_path):
    paths = _logs(tmp_path, ACROSS, _across)
    blind = evaluate(paths, CONTEXT)
    assert [s.node for s in blind.attribution.suspects] == ["gpu-1", "gpu-2", "gpu-3", "gpu-4"]

    result = evaluate(paths, CONTEXT, LEAVES)
    assert not result.go
    assert result.attribution.suspects == ()
    (note,) = result.attribution.notes
    assert note.startswith(
        "switch boundary nn-leaf-a | nn-leaf-b: every pair across it fell below the floor "
        "(gpu-1,gpu-3 (round 1); gpu-2,gpu-4 (round 1); gpu-1,gpu-4 (round 2); gpu-2,gpu-3 (round 2))"
    )
    assert "not a node, so no node is drained" in note


def test_the_pair_lines_switches_are_enough(tmp_path):
    """The pairwise job names each node's leaf in its pair line: no --topology needed."""
    result = evaluate(_logs(tmp_path, ACROSS, _across, switches=True), CONTEXT)
    assert result.attribution.suspects == ()
    assert result.attribution.notes[0].startswith("switch boundary nn-leaf-a | nn-leaf-b: ")


def test_a_bad_node_is_still_named_with_its_switch(tmp_path):
    rounds = [[("gpu-1", "gpu-2"), ("gpu-3", "gpu-4")], [("gpu-1", "gpu-3"), ("gpu-2", "gpu-4")]]
    paths = _logs(tmp_path, rounds, lambda a, b: "gpu-4" in (a, b))
    result = evaluate(paths, CONTEXT, LEAVES)
    (suspect,) = result.attribution.suspects
    assert (suspect.node, suspect.switch) == ("gpu-4", "nn-leaf-b")
    assert result.attribution.notes == ()


def test_a_boundary_with_one_good_pair_across_it_blames_nodes_as_before(tmp_path):
    paths = _logs(tmp_path, ACROSS, lambda a, b: _across(a, b) and "gpu-4" in (a, b))
    result = evaluate(paths, CONTEXT, LEAVES)
    assert [s.node for s in result.attribution.suspects] == ["gpu-4"]
    assert not any(note.startswith("switch boundary") for note in result.attribution.notes)


def test_cli_reads_the_topology_conf_the_head_writes(tmp_path):
    answer = {
        "Instances": [
            {
                "InstanceId": f"i-0a1b2c3d4e5f0000{n}",
                "InstanceType": P5,
                "NetworkNodes": ["nn-top", "nn-spine", leaf],
            }
            for n, leaf in ((1, "nn-leaf-a"), (2, "nn-leaf-a"), (3, "nn-leaf-b"), (4, "nn-leaf-b"))
        ]
    }
    names = {f"i-0a1b2c3d4e5f0000{n}": f"gpu-{n}" for n in range(1, 5)}
    conf = tmp_path / "topology.conf"
    conf.write_text(render_conf(build(parse_response(answer), names)))
    paths = _logs(tmp_path, ACROSS, lambda a, b: _across(a, b) and "gpu-4" in (a, b))
    result = CliRunner().invoke(
        app, ["gate", *map(str, paths), "--instance-type", P5, "--topology", str(conf)]
    )
    assert result.exit_code == 1, result.output
    assert "suspect node gpu-4 (switch nn-leaf-b): " in result.stdout

    conf.write_text("SwitchName=a Nodes=gpu-1\nSwitchName=b Nodes=gpu-1\n")
    result = CliRunner().invoke(
        app, ["gate", *map(str, paths), "--instance-type", P5, "--topology", str(conf)]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error {conf}: line 2: node gpu-1 is under a and b")

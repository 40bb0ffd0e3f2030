"""Whatever a file holds, `gpucluster gate` answers 0 (GO), 1 (NO-GO) or 2 (unreadable), never a traceback.

Random text rarely looks like nccl-tests, so most examples start from real logs
(the public fixtures and built ones) and break them the ways logs break: lines lost,
repeated, cut, joined with noise, numbers replaced.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from gpucluster.cli import app
from tests.conftest import REPO
from tests.nccl_logs import Spec, json_log, text_log

FIXTURES = REPO / "tests" / "fixtures" / "nccl"
TEXT_LOGS = [path.read_text() for path in sorted(FIXTURES.glob("*.txt"))] + [
    text_log(Spec(prefix="srun", pair=(1, "gpu-1", "gpu-2"))),
    text_log(Spec(prefix="mpirun", network={"gpu-2": "socket"})),
]
JSON_LOGS = [path.read_text() for path in sorted(FIXTURES.glob("*.json"))] + [json_log(Spec())]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NOISE = st.sampled_from(
    [
        "",
        "#",
        "0: ",
        "[1,3]<stdout>:",
        "gpu-1:1:1 [0] NCCL INFO Using network Socket",
        "gpu-1:1:1 [0] NCCL INFO NET/OFI Selected provider is efa (found 99999999999999999999999 nics)",
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 0 step: 0(factor)",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong",
        "  17179869184    4294967296     float     sum      -1    nan    inf    -1e999      N/A",
        "     1048576  " + "9" * 5000,
        "# Out of bounds values : 3 FAILED",
        "# Avg bus bandwidth    : nan",
        "gpucluster-pair round=1 nodes=a,b",
        "gpucluster-pair round=" + "9" * 5000 + " nodes=a,b",
        "gpucluster-efa-check node=x result=fail efa=1/32 gpus=8 reason=",
        "Test NCCL failure common.cu:1005 'unhandled system error'",
        "# Collective test starting: [/x]",
        "gpu-9:1:1 [0] NCCL INFO Using network [bold]x[/y]",
    ]
)


def gate_exit(content: str | bytes, *args: str) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "log.txt"
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, errors="surrogateescape")
        result = CliRunner().invoke(app, ["gate", str(path), *args, "--report", str(Path(directory) / "r")])
    return result.exit_code, result.output


def assert_answered(code: int, output: str) -> None:
    assert code in (0, 1, 2), output
    assert "Traceback" not in output and "internal error" not in output, output


@SETTINGS
@given(st.text(max_size=400))
def test_arbitrary_text(text):
    assert_answered(*gate_exit(text, "--instance-type", "p5.48xlarge"))


@SETTINGS
@given(st.binary(max_size=200))
def test_arbitrary_bytes(data):
    assert_answered(*gate_exit(data))


@st.composite
def broken_logs(draw):
    lines = draw(st.sampled_from(TEXT_LOGS)).split("\n")
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        if not lines:
            break
        index = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        action = draw(st.sampled_from(["drop", "repeat", "cut", "noise", "append", "number"]))
        if action == "drop":
            del lines[index]
        elif action == "repeat":
            lines.insert(index, lines[index])
        elif action == "cut":
            lines[index] = lines[index][: draw(st.integers(min_value=0, max_value=len(lines[index])))]
        elif action == "noise":
            lines.insert(index, draw(NOISE))
        elif action == "append":
            lines[index] += draw(st.one_of(NOISE, st.text(max_size=20)))
        else:
            tokens = lines[index].split()
            if tokens:
                spot = draw(st.integers(min_value=0, max_value=len(tokens) - 1))
                tokens[spot] = draw(st.sampled_from(["-1", "0", "N/A", "nan", "1e400", "x", "99999999999"]))
                lines[index] = " ".join(tokens)
    return "\n".join(lines)


@SETTINGS
@given(broken_logs(), st.sampled_from([[], ["--instance-type", "p5.48xlarge"], ["--min-busbw", "1"]]))
def test_broken_real_logs(text, args):
    assert_answered(*gate_exit(text, *args))


def _containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False),
        st.text(max_size=10),
    ),
    _containers,
    max_leaves=12,
)


@st.composite
def broken_json(draw):
    data = json.loads(draw(st.sampled_from(JSON_LOGS)))
    paths = [
        ("results",),
        ("config",),
        ("config", "devices"),
        ("nccl_version",),
        ("out_of_bounds",),
        ("args",),
    ]
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(paths))
        target = data
        for key in path[:-1]:
            target = target.get(key, {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            target[path[-1]] = draw(json_values)
    if isinstance(data.get("results"), list) and data["results"] and draw(st.booleans()):
        index = draw(st.integers(min_value=0, max_value=len(data["results"]) - 1))
        data["results"][index] = draw(json_values)
    return json.dumps(data)


@SETTINGS
@given(broken_json())
def test_broken_json(text):
    assert_answered(*gate_exit(text, "--instance-type", "p5.48xlarge"))

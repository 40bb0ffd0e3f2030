"""The CDK runtime's own refusals, provoked for real in a fresh interpreter: a jsii package
cache under a directory others may write, Node missing or not Node, a full output disk.
Each is one line naming the directory or tool and the fix, exit 1, for `gpucluster
synth`, `gpucluster diff` and the app `cdk synth` runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpucluster.synth.runtime_problems import MIN_NODE, check_node
from tests.conftest import REPO
from tests.real_refusals import cdk_app, errors, gpucluster, on_tmpfs, run

DEFAULT = REPO / "examples" / "default.yaml"
# jsii finds its cache from HOME (or XDG_CACHE_HOME) unless told otherwise.
# What the CDK CLI hands its app: the -c values (cdk.json names the default config).
CDK_CONTEXT = {"CDK_CONTEXT_JSON": json.dumps({"config": str(DEFAULT)})}
CACHE_SETTINGS = {
    "JSII_RUNTIME_PACKAGE_CACHE_ROOT": None,
    "JSII_RUNTIME_PACKAGE_CACHE": None,
    "XDG_CACHE_HOME": None,
}


def _entry_points(tmp_path: Path) -> dict[str, list[str]]:
    baseline = tmp_path / "baseline"
    baseline.mkdir(exist_ok=True)
    (baseline / "demo-network.template.json").write_text(json.dumps({"Resources": {}}))
    return {
        "synth": gpucluster("synth", DEFAULT, "-o", tmp_path / "out"),
        "diff": gpucluster("diff", DEFAULT, "--baseline", baseline),
        "cdk synth": cdk_app(),
    }


@pytest.mark.parametrize("entry", ["synth", "diff", "cdk synth"])
def test_a_jsii_cache_others_could_write_names_the_directory(tmp_path: Path, entry: str) -> None:
    home = tmp_path / "home"
    shared = home / ".cache"
    shared.mkdir(parents=True)
    shared.chmod(0o777)
    env = {**CDK_CONTEXT, **CACHE_SETTINGS, "HOME": str(home), "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    result = run(_entry_points(tmp_path)[entry], env)
    assert result.returncode == 1, result.stderr
    assert errors(result.stderr) == [
        f"error {shared}: is writable by group or others (mode 0777), so jsii will not keep its package "
        f"cache in {shared}/aws/jsii/package-cache (other users could change the code it runs); "
        f"`chmod go-w {shared}`, or set JSII_RUNTIME_PACKAGE_CACHE_ROOT to a directory only you can write"
    ]


@pytest.mark.parametrize("entry", ["synth", "diff", "cdk synth"])
@pytest.mark.parametrize(
    ("node", "what"), [("/nonexistent/node", "Node.js is not there"), ("/bin/true", "is not Node.js")]
)
def test_no_node_names_the_node_jsii_would_start(tmp_path: Path, entry: str, node: str, what: str) -> None:
    env = {**CDK_CONTEXT, "JSII_NODE": node, "CDK_OUTDIR": str(tmp_path / "cdk.out")}
    result = run(_entry_points(tmp_path)[entry], env)
    assert result.returncode == 1, result.stderr
    (line,) = errors(result.stderr)
    assert line.startswith(f"error {node}: {what}"), line
    assert line.endswith(
        f"; point JSII_NODE at Node {MIN_NODE} or later, or unset it to use the Node gpucluster installs"
    )
    assert "Traceback" not in result.stderr


def test_a_node_older_than_the_cdk_needs_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Node older than 20 is installed here: a program answering `--version` as Node 18
    does stands in for one (check_node reads only that answer)."""
    import sys

    from gpucluster.env_problem import EnvironmentProblem

    old = tmp_path / "node"
    old.write_text("#!/bin/sh\necho v18.20.4\n")
    old.chmod(0o755)
    monkeypatch.setenv("JSII_NODE", str(old))
    monkeypatch.delitem(sys.modules, "aws_cdk", raising=False)
    with pytest.raises(EnvironmentProblem, match=f"is Node v18.20.4; the CDK needs Node {MIN_NODE} or later"):
        check_node()


@pytest.mark.parametrize("entry", ["synth", "cdk synth"])
def test_a_full_output_disk_names_the_directory(tmp_path: Path, entry: str) -> None:
    mount = tmp_path / "mnt"
    mount.mkdir()
    out = mount / "out"
    argv = gpucluster("synth", DEFAULT, "-o", out) if entry == "synth" else cdk_app()
    result = run(on_tmpfs(mount, "size=64k", argv), {**CDK_CONTEXT, "CDK_OUTDIR": str(out)})
    assert result.returncode == 1, result.stderr
    (line,) = errors(result.stderr)
    assert line.startswith(f"error {out}"), line
    # Node's words ("no space ...") or Python's ("No space ...") for the file that failed.
    assert "cannot be written (" in line and "o space left on device)" in line, line
    assert line.endswith("; free space on that disk, or point --output at a directory on another one")

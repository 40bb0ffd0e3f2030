"""The chmod in the fix for a jsii cache others may write, piped to sh: the directory jsii
named reaches chmod whole, whatever its name holds, and nothing else runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.synth.runtime_problems import explain
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh


# jsii's message is one line: a name with a newline is not one it prints.
@pytest.mark.parametrize("name", [name for name in HOSTILE_NAMES if name.isprintable()])
def test_the_chmod_gets_the_directory_whole(tmp_path: Path, name: str) -> None:
    shared = f"/home/someone/{name}"
    message = (
        f"Cannot use the jsii package cache in {shared}/aws/jsii/package-cache: because {shared} is "
        "writable by group or others (mode 0777). Fix the directory's permissions"
    )
    problem = explain(RuntimeError(message), tmp_path / "out", "--output")
    assert problem is not None
    chmod = problem.fix.split("`", 1)[1].split("`, or set JSII_RUNTIME_PACKAGE_CACHE_ROOT", 1)[0]
    run = pipe_to_sh(chmod, ["chmod"], tmp_path)
    assert (run.returncode, run.strays) == (0, [])
    assert [call.argv for call in run.calls] == [["go-w", shared]]

"""Run gpucluster (or the CDK app) in a child process where the machine really refuses:
file modes that bind even for root, a read-only or full file system, a HOME or Node the
CDK runtime will not use. The child is a fresh interpreter, so the jsii runtime starts
there as it does for a user."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from tests.conftest import REPO

# Root reads and writes past file modes through these two capabilities (capabilities(7)).
_OVERRIDES = "-dac_override,-dac_read_search"


def bound_by_file_modes(argv: Sequence[str]) -> list[str]:
    """`argv` run so that file modes apply: as root, without the capabilities that bypass
    them (setpriv drops them from the bounding set, so the exec'd program never has them)."""
    if os.geteuid() != 0:
        return list(argv)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv(1) is never refused by file modes")
    return [setpriv, f"--bounding-set={_OVERRIDES}", *argv]


def on_tmpfs(directory: Path, options: str, argv: Sequence[str]) -> list[str]:
    """`argv` run in a private mount namespace with a tmpfs mounted on `directory`
    (`ro`: read-only; `size=64k`: full after 64 KiB). Needs root (unshare(1), mount(8))."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("mounting a file system for one process needs root and unshare(1)")
    script = f'mount -t tmpfs -o {options} tmpfs {shlex.quote(str(directory))} && exec "$@"'
    return ["unshare", "--mount", "--propagation=private", "sh", "-c", script, "sh", *argv]


def gpucluster(*args: str | Path) -> list[str]:
    return [sys.executable, "-m", "gpucluster", *map(str, args)]


def cdk_app() -> list[str]:
    """The app `cdk synth` runs (cdk.json: `python3 app.py`)."""
    return [sys.executable, str(REPO / "app.py")]


def run(argv: Sequence[str], env: Mapping[str, str | None] | None = None) -> subprocess.CompletedProcess[str]:
    """`argv` from the repository root with gpucluster importable; `env` entries set to None
    are removed."""
    merged = {**os.environ, "PYTHONPATH": str(REPO)}
    for key, value in (env or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return subprocess.run(
        argv, cwd=REPO, env=merged, capture_output=True, text=True, timeout=300, check=False
    )


def errors(stderr: str) -> list[str]:
    """stderr without the config's warnings (an example's AMI is not pinned)."""
    return [line for line in stderr.splitlines() if not line.startswith("warning ")]

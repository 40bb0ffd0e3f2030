"""The head node's agents as the node runs them: plain scripts in a copy of the bundle,
started by systemd units read the way systemd reads them."""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

AGENTS = REPO / "gpucluster" / "agents"
UNITS = REPO / "templates" / "systemd"


def run_from_bundle_copy(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Copy the agents into a bundle directory under `tmp_path` and run `script` there with
    this interpreter, without the caller's GPUCLUSTER_* settings."""
    bundle = tmp_path / "bundle" / "agents"
    if not bundle.exists():
        bundle.mkdir(parents=True)
        for path in AGENTS.glob("*.py"):
            shutil.copy(path, bundle / path.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, str(bundle / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


def systemd_unit(name: str) -> configparser.ConfigParser:
    """A unit under templates/systemd as sections of keys."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parser.read_string((UNITS / name).read_text())
    return parser

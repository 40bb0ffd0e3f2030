"""The agents ship in the bootstrap bundle as plain scripts: they import only the standard
library, boto3 and each other, and the controller runs from a copy of the bundle."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

AGENTS = REPO / "gpucluster" / "agents"


def test_agents_import_only_the_standard_library_boto3_and_each_other():
    siblings = {path.stem for path in AGENTS.glob("*.py")}
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore"} | siblings
    for path in AGENTS.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{path.name} imports {roots - allowed}"


def _bundle_copy(tmp_path: Path) -> Path:
    bundle = tmp_path / "bundle" / "agents"
    bundle.mkdir(parents=True)
    for path in AGENTS.glob("*.py"):
        shutil.copy(path, bundle / path.name)
    return bundle


def test_the_controller_runs_as_a_script_from_a_bundle_copy(tmp_path):
    bundle = _bundle_copy(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    help_run = subprocess.run(
        [sys.executable, str(bundle / "capacity_controller.py"), "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert help_run.returncode == 0, help_run.stderr
    assert "--grace-minutes" in help_run.stdout
    unset = subprocess.run(
        [sys.executable, str(bundle / "capacity_controller.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert unset.returncode == 2
    assert "GPUCLUSTER_CLUSTER is not set" in unset.stdout

"""The agents ship in the bootstrap bundle as plain scripts: they import only the standard
library, boto3 and each other, and the controller runs from a copy of the bundle."""

from __future__ import annotations

import ast
import sys

from tests.agent_scripts import AGENTS, run_from_bundle_copy


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


def test_the_controller_runs_as_a_script_from_a_bundle_copy(tmp_path):
    help_run = run_from_bundle_copy(tmp_path, "capacity_controller.py", "--help")
    assert help_run.returncode == 0, help_run.stderr
    assert "--grace-minutes" in help_run.stdout
    unset = run_from_bundle_copy(tmp_path, "capacity_controller.py")
    assert unset.returncode == 2
    assert "GPUCLUSTER_CLUSTER is not set" in unset.stdout

"""The agents ship in the bootstrap bundle as plain scripts: they import only the standard
library, boto3 and each other, and the controller runs from a copy of the bundle."""

from __future__ import annotations

import ast

from gpucluster.agents import EKS_FUNCTION_MODULES, accounting_secret_settings, nodegroup_settings
from gpucluster.agents import topology_writer_settings as writer_settings
from gpucluster.bootstrap.bundle import head_agents
from gpucluster.resolved import resolve
from tests.agent_scripts import AGENTS, assert_package_imports_only_itself_and_the_sdk, run_from_bundle_copy

EKS_SETTINGS = (nodegroup_settings, writer_settings, accounting_secret_settings)


def test_agents_import_only_the_standard_library_boto3_and_each_other():
    assert_package_imports_only_itself_and_the_sdk([path.name for path in AGENTS.glob("*.py")])


def test_the_controller_runs_as_a_script_from_a_bundle_copy(tmp_path):
    help_run = run_from_bundle_copy(tmp_path, "capacity_controller.py", "--help")
    assert help_run.returncode == 0, help_run.stderr
    assert "--grace-minutes" in help_run.stdout
    unset = run_from_bundle_copy(tmp_path, "capacity_controller.py")
    assert unset.returncode == 2
    assert "GPUCLUSTER_CLUSTER is not set" in unset.stdout


def sibling_imports(path) -> set[str]:
    """The agent modules `path` imports (as `from .x`, `from . import x` or, run as a script,
    `import x` / `from x import`), as file names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level and not node.module:
                names |= {alias.name for alias in node.names}
            else:
                names.add(node.module or "")
    return {f"{name}.py" for name in names if (AGENTS / f"{name}.py").is_file()}


def test_the_ec2_bundle_carries_every_agent_but_the_eks_functions(example_configs):
    code = head_agents(resolve(example_configs["default"])).code
    every = {path.name for path in AGENTS.glob("*.py")}
    assert {name.removeprefix("agents/") for name in code} == every - EKS_FUNCTION_MODULES


def test_no_module_the_bundle_ships_imports_an_eks_function_module():
    for path in AGENTS.glob("*.py"):
        if path.name not in EKS_FUNCTION_MODULES:
            assert not sibling_imports(path) & EKS_FUNCTION_MODULES, path.name


def test_each_eks_function_module_is_in_an_eks_function_s_package_or_its_settings():
    packaged = set().union(*(settings.PACKAGE for settings in EKS_SETTINGS))
    settings_files = {f"{settings.__name__.rsplit('.', 1)[1]}.py" for settings in EKS_SETTINGS}
    assert packaged | settings_files >= EKS_FUNCTION_MODULES

"""The agents ship in the bootstrap bundle as the package tree of what the nodes run
(gpucluster.agent_package), and run from a copy of that tree alone."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents import accounting_secret_settings, nodegroup_settings
from gpucluster.agents import topology_writer_settings as writer_settings
from gpucluster.bootstrap.bundle import NODE_AGENTS, head_agents, node_metrics_units
from gpucluster.bootstrap.node_hosts import AGENT as NODE_HOSTS_AGENT
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import AGENTS_TREE, NODE_LAYOUT
from tests.agent_scripts import SDK, bundle_tree, run_from_bundle_copy

HANDLERS = (nodegroup_settings.HANDLER, writer_settings.HANDLER, accounting_secret_settings.HANDLER)
MODULE_ARGUMENT = re.compile(r"python3 -m (gpucluster\.agents\.\w+)")


def test_the_bundle_carries_the_tree_of_what_the_nodes_run(example_configs):
    code = head_agents(resolve(example_configs["default"])).code
    assert code == {f"{AGENTS_TREE}/{path}": text for path, text in agent_tree(NODE_AGENTS).items()}
    assert {"agents/gpucluster/__init__.py", "agents/gpucluster/agents/__init__.py"} <= set(code)
    for module in NODE_AGENTS:
        assert f"{AGENTS_TREE}/{module.replace('.', '/')}.py" in code


def test_every_unit_runs_an_entry_and_documents_its_source(example_configs):
    cfg = resolve(example_configs["default"])
    agents = head_agents(cfg)
    units = {**agents.installed, **node_metrics_units(cfg)}
    run = set()
    for path, text in units.items():
        if not path.endswith(".service") or "-m gpucluster" not in text:
            continue
        [module] = MODULE_ARGUMENT.findall(text)
        assert module in NODE_AGENTS, path
        assert f"WorkingDirectory={NODE_LAYOUT.agents_dir}\n" in text, path
        assert f"Documentation=file://{NODE_LAYOUT.agent_source(module)}\n" in text, path
        assert NODE_LAYOUT.agent_source(module).removeprefix(f"{NODE_LAYOUT.bundle_dir}/") in agents.code
        run.add(module)
    # The head's units, the compute nodes' collector; accounts and node_hosts run from scripts.
    assert run == set(NODE_AGENTS) - {"gpucluster.agents.accounts", NODE_HOSTS_AGENT}


def test_no_eks_function_ships_in_the_bundle(example_configs):
    code = head_agents(resolve(example_configs["default"])).code
    for handler in HANDLERS:
        assert f"{AGENTS_TREE}/{handler_module(handler).replace('.', '/')}.py" not in code, handler


def test_the_controller_runs_from_a_copy_of_the_tree_alone(tmp_path):
    help_run = run_from_bundle_copy(tmp_path, "gpucluster.agents.capacity_controller", "--help")
    assert help_run.returncode == 0, help_run.stderr
    assert "--grace-minutes" in help_run.stdout
    unset = run_from_bundle_copy(tmp_path, "gpucluster.agents.capacity_controller")
    assert unset.returncode == 2
    assert "GPUCLUSTER_CLUSTER is not set" in unset.stdout


def test_the_tree_is_what_python_imports_not_the_checkout(tmp_path):
    tree = bundle_tree(tmp_path)
    probe = (
        "import importlib.util, gpucluster.agents.capacity_controller as agent\n"
        "print(agent.__file__)\n"
        "print(importlib.util.find_spec('gpucluster.config'))\n"
    )
    env = os.environ | {"PYTHONPATH": SDK, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-S", "-c", probe], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    # The agent is the tree's copy, and the rest of gpucluster is not there to import.
    assert done.stdout.splitlines() == [
        str(tree / "gpucluster" / "agents" / "capacity_controller.py"),
        "None",
    ]

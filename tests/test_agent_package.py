"""The agents' package trees: what an entry imports of gpucluster, followed to the end, and
a loud refusal of what the nodes and the Lambda runtime cannot import."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpucluster.agent_package import PackagingError, agent_tree, handler_module, module_tree
from gpucluster.bootstrap.bundle import NODE_AGENTS


def package(tmp_path: Path, modules: dict[str, str]) -> Path:
    """A stand-in gpucluster package under `tmp_path`: its agents' sources by module name."""
    root = tmp_path / "gpucluster"
    (root / "agents").mkdir(parents=True)
    (root / "__init__.py").write_text('"""stand-in"""\n')
    (root / "agents" / "__init__.py").write_text("")
    for name, text in modules.items():
        (root / "agents" / f"{name}.py").write_text(text)
    return root


def test_the_tree_is_the_entries_what_they_import_and_their_packages(tmp_path):
    root = package(
        tmp_path,
        {
            "entry": "import json\nimport boto3\nfrom gpucluster.agents import names\n",
            # A name imported from a module is not a module; an import inside a function counts.
            "names": (
                "from gpucluster.agents.formats import NAME\n\n"
                "def later():\n    import gpucluster.agents.lazy\n"
            ),
            "formats": "NAME = 'x'\n",
            "lazy": "from botocore.exceptions import ClientError\n",
            "unused": "import yaml\n",
        },
    )
    tree = module_tree(("gpucluster.agents.entry",), root)
    assert list(tree) == [
        "gpucluster/__init__.py",
        "gpucluster/agents/__init__.py",
        "gpucluster/agents/entry.py",
        "gpucluster/agents/formats.py",
        "gpucluster/agents/lazy.py",
        "gpucluster/agents/names.py",
    ]
    assert tree["gpucluster/agents/formats.py"] == "NAME = 'x'\n"


@pytest.mark.parametrize(
    "heavy", ["import pydantic", "from aws_cdk import aws_lambda", "import jinja2.sandbox"]
)
def test_a_module_the_entries_reach_that_imports_what_the_nodes_lack_fails_the_build(tmp_path, heavy):
    root = package(
        tmp_path,
        {
            "entry": "from gpucluster.agents import helper\n",
            "helper": f"import os\n\ndef f():\n    {heavy}\n",
        },
    )
    with pytest.raises(
        PackagingError, match=r"gpucluster\.agents\.helper imports .* \(line 4\), which the nodes"
    ):
        module_tree(("gpucluster.agents.entry",), root)


def test_the_real_package_refuses_the_config_and_its_pydantic():
    # What an agent importing gpucluster.config (for its names, say) would pull in.
    with pytest.raises(PackagingError, match="pydantic"):
        agent_tree(("gpucluster.config",))


def test_a_relative_import_or_a_missing_module_fails_the_build(tmp_path):
    root = package(tmp_path, {"entry": "from . import helper\n", "helper": ""})
    with pytest.raises(PackagingError, match="imports relatively"):
        module_tree(("gpucluster.agents.entry",), root)
    with pytest.raises(PackagingError, match="gpucluster.agents.gone is imported or named"):
        module_tree(("gpucluster.agents.gone",), root)


def test_the_tree_is_the_same_on_every_build_and_in_path_order():
    first = dict(agent_tree(NODE_AGENTS))
    again = dict(module_tree(NODE_AGENTS))
    assert first == again and list(first) == sorted(first)
    assert list(module_tree(tuple(reversed(NODE_AGENTS)))) == list(first)


def test_the_shipped_package_init_imports_nothing():
    # Python imports gpucluster/__init__.py before any agent: it must stay import-light.
    init = agent_tree(NODE_AGENTS)["gpucluster/__init__.py"]
    assert not [node for node in ast.walk(ast.parse(init)) if isinstance(node, ast.Import | ast.ImportFrom)]


def test_a_handler_s_module_is_its_dotted_path_less_the_function():
    assert (
        handler_module("gpucluster.agents.nodegroup_scaler.handler") == "gpucluster.agents.nodegroup_scaler"
    )

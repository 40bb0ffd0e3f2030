"""The two renderers stay apart (README, Layout): the infrastructure (gpucluster.stacks and
gpucluster.constructs_lib) is built from the resolved cluster and the rendered node files,
never from the config or a node renderer, and the node renderers never reach for the
infrastructure. Job renderers and the log analysis of gate/ do not import each other.
Constructs take narrow props: not even the resolved cluster, and never a stack.

Like tests/test_layers.py, every import counts, inside functions and under TYPE_CHECKING too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_layers import module_name, project_imports, source_files

NODE_RENDERERS = ("gpucluster.bootstrap", "gpucluster.slurm", "gpucluster.launch", "gpucluster.jobs")
STACKS = "gpucluster.stacks"
CONSTRUCTS = "gpucluster.constructs_lib"
INFRA = (STACKS, CONSTRUCTS)
GATE = "gpucluster.gate"
RESOLVED = "gpucluster.resolved"
# The folders the package links in from the top of the repository: importable by these
# names too from a checkout's root, never so (a wheel has no such top-level package).
LINKED_FOLDERS = ("stacks", "constructs_lib")

# (importer, what it may not import, why)
Rules = tuple[tuple[str, tuple[str, ...], str], ...]
RULES: Rules = (
    *(
        (infra, ("gpucluster.config", *NODE_RENDERERS), "infra is built from ResolvedCluster and NodeFiles")
        for infra in INFRA
    ),
    (CONSTRUCTS, (RESOLVED,), "a construct takes narrow props, the values it needs"),
    (CONSTRUCTS, (STACKS,), "stacks wire constructs, never the reverse"),
    (RESOLVED, (*NODE_RENDERERS, *INFRA), "the resolved cluster feeds both renderers and knows neither"),
    *(
        (renderer, INFRA, "node files are rendered before, and apart from, the stacks")
        for renderer in NODE_RENDERERS
    ),
)
# gate/ keeps only the log analysis; the job renderers are gpucluster.jobs.
GATE_RULES: Rules = (
    (GATE, NODE_RENDERERS, "gate analyses logs; it renders nothing the nodes run"),
    *((renderer, (GATE,), "the node files take no workstation log analysis") for renderer in NODE_RENDERERS),
)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def breaches(path: Path, rules: Rules, module: str | None = None) -> list[str]:
    """One line per import in `path` (read as `module`, by default its own name) that a rule
    of its package forbids, or a relative import (which project_imports cannot name)."""
    module = module or module_name(path)
    shown = module.replace(".", "/") + ".py"
    found = []
    for importer, forbidden, why in rules:
        if not _within(module, importer):
            continue
        found += [
            f"{shown}:{line} imports {name}: {why}"
            for line, name in project_imports(path)
            if any(_within(name, package) for package in forbidden)
        ]
        found += [
            f"{shown}:{node.lineno} imports relatively; name the module in full"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.ImportFrom) and node.level > 0
        ]
    return found


def _checked(rules: Rules) -> list[Path]:
    return [path for path in source_files() if any(_within(module_name(path), rule[0]) for rule in rules)]


@pytest.mark.parametrize("path", _checked(RULES), ids=lambda p: str(p.relative_to(REPO)))
def test_the_renderers_stay_apart(path: Path) -> None:
    found = breaches(path, RULES)
    assert not found, "\n".join(found)


def test_gate_and_the_node_renderers_stay_apart() -> None:
    found = [line for path in _checked(GATE_RULES) for line in breaches(path, GATE_RULES)]
    assert not found, "\n".join(found)


def test_every_package_a_rule_names_has_modules() -> None:
    """A rule about a package that was renamed away would pass for ever."""
    packages = {*INFRA, RESOLVED, GATE, *NODE_RENDERERS}
    for package in packages:
        assert _checked(((package, (), ""),)), f"no module under {package}"


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "def build():\n"
        "    from gpucluster.config import ClusterConfig\n"
        "    from gpucluster import resolved\n"
        "    from . import cfn\n"
    )
    found = breaches(probe, RULES, "gpucluster.constructs_lib.probe")
    relative = "gpucluster/constructs_lib/probe.py:4 imports relatively; name the module in full"
    assert found == [
        "gpucluster/constructs_lib/probe.py:2 imports gpucluster.config.ClusterConfig: "
        "infra is built from ResolvedCluster and NodeFiles",
        relative,
        "gpucluster/constructs_lib/probe.py:3 imports gpucluster.resolved: "
        "a construct takes narrow props, the values it needs",
        relative,
        relative,
    ]
    probe.write_text("from gpucluster.stacks.eks_stack import EksStack\n")
    assert breaches(probe, RULES, "gpucluster.constructs_lib.eks.probe") == [
        "gpucluster/constructs_lib/eks/probe.py:1 imports gpucluster.stacks.eks_stack.EksStack: "
        "stacks wire constructs, never the reverse"
    ]
    probe.write_text("import gpucluster.stacks.cluster_stack\n")
    assert breaches(probe, RULES, "gpucluster.bootstrap.probe") == [
        "gpucluster/bootstrap/probe.py:1 imports gpucluster.stacks.cluster_stack: "
        "node files are rendered before, and apart from, the stacks"
    ]
    # A stack may wire from the resolved cluster; the gate rule is apart from these.
    probe.write_text("from gpucluster.resolved import ResolvedCluster\nfrom gpucluster.gate import verdict\n")
    assert breaches(probe, RULES, "gpucluster.stacks.probe") == []
    assert breaches(probe, GATE_RULES, "gpucluster.slurm.probe") == [
        "gpucluster/slurm/probe.py:2 imports gpucluster.gate.verdict: "
        "the node files take no workstation log analysis"
    ]


def _top_level_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] in LINKED_FOLDERS]


def test_the_linked_folders_are_imported_through_the_package_only() -> None:
    """`import stacks` works from a checkout's root and nowhere else: every import names
    gpucluster.stacks and gpucluster.constructs_lib, as the wheel holds them."""
    files = [*source_files(), *sorted((REPO / "tests").rglob("*.py")), REPO / "app.py"]
    found = [
        f"{path.relative_to(REPO)}:{line} imports {name}"
        for path in files
        for line, name in _top_level_imports(path)
    ]
    assert not found, "\n".join(found)
    probe = REPO / "tests" / "__init__.py"
    assert _top_level_imports(probe) == []

"""The agents as the nodes and the EKS functions get them: from a few entry modules, the
gpucluster modules they import, followed to the end, as a package tree.

A node runs an agent as `python3 -m gpucluster.agents.<module>` with the tree as its working
directory, and a Lambda function's handler is `gpucluster.agents.<module>.<function>` at the
top of its package, so the agents import each other absolutely, as everywhere else. What a
node or the Lambda runtime has besides the standard library is boto3 and botocore; a module
of the tree that imports anything else (pydantic, aws_cdk, jinja2, yaml) would fail there at
its first run, so it fails the build here.
"""

from __future__ import annotations

import ast
import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from gpucluster.package_files import PACKAGE

ROOT = "gpucluster"
# Python's on the nodes (python3-boto3) and the Lambda runtime's.
THIRD_PARTY = frozenset({"boto3", "botocore"})


class PackagingError(Exception):
    """A module the entries reach cannot run where they ship."""


def module_file(module: str, package: Path = PACKAGE) -> Path | None:
    """The source of a gpucluster module (a package's __init__.py), or None."""
    parts = module.split(".")[1:]
    candidates = [package.joinpath(*parts, "__init__.py")]
    if parts:
        candidates.append(package.joinpath(*parts[:-1], f"{parts[-1]}.py"))
    return next((candidate for candidate in candidates if candidate.is_file()), None)


def _packages(module: str) -> list[str]:
    """The packages Python imports before `module`: gpucluster, gpucluster.agents, ..."""
    parts = module.split(".")
    return [".".join(parts[:end]) for end in range(1, len(parts))]


def _imports(module: str, path: Path, package: Path) -> set[str]:
    """The gpucluster modules `module` imports (inside functions too); anything it imports
    from outside gpucluster, the standard library and THIRD_PARTY is a PackagingError."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                raise PackagingError(
                    f"{module} imports relatively (line {node.lineno}); import gpucluster.* absolutely"
                )
            names = [node.module or ""]
            # `from gpucluster.agents import runtime` imports a module; `from ...cluster_names
            # import GROUP_NAME` a name.
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if node.module
                and node.module.split(".")[0] == ROOT
                and module_file(f"{node.module}.{alias.name}", package)
            )
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top == ROOT:
                found.add(name)
            elif top not in sys.stdlib_module_names and top not in THIRD_PARTY:
                raise PackagingError(
                    f"{module} imports {name} (line {node.lineno}), which the nodes and the Lambda "
                    f"runtime lack: they have the standard library and {', '.join(sorted(THIRD_PARTY))}"
                )
    return found


def module_tree(entries: tuple[str, ...], package: Path = PACKAGE) -> Mapping[str, str]:
    """The entries and every gpucluster module they import, with the packages' __init__.py,
    keyed by their path in the tree (`gpucluster/agents/runtime.py`), in path order."""
    todo = list(entries)
    seen: dict[str, Path] = {}
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        path = module_file(module, package)
        if path is None:
            raise PackagingError(f"{module} is imported or named as an entry but has no source in {package}")
        seen[module] = path
        todo.extend(_packages(module))
        todo.extend(_imports(module, path, package))
    files = {(Path(ROOT) / path.relative_to(package)).as_posix(): path for path in seen.values()}
    return MappingProxyType({name: files[name].read_text() for name in sorted(files)})


@functools.cache
def agent_tree(entries: tuple[str, ...]) -> Mapping[str, str]:
    """module_tree of the package's own agents, read once per process: the bundle and each
    function of every synth build from the same few."""
    return module_tree(entries)


def handler_module(handler: str) -> str:
    """The module of a Lambda handler, `gpucluster.agents.<module>.<function>`."""
    return handler.rpartition(".")[0]


def write_tree(tree: Mapping[str, str], directory: Path) -> None:
    """The tree's files under `directory`, with the folders they need."""
    for name, text in tree.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

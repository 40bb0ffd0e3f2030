"""The trainer's import closure is found by a regular expression (gpucluster.launch.node_lib);
here it is held to what Python's own parser finds. It may find more (an import written in a
docstring's example), never less: a module the trainer imports and a node lacks fails the job."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gpucluster.launch import node_lib
from tests.test_layers import source_files

# Every module of the package, those linked in from stacks/ and constructs_lib/ too.
MODULES = source_files()


def parsed_imports(source: str) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.split(".")[0] == "gpucluster"}


@pytest.mark.parametrize("path", MODULES, ids=lambda path: path.relative_to(node_lib.PACKAGE_ROOT).as_posix())
def test_every_import_the_parser_finds_in_a_module_is_found(path: Path) -> None:
    assert parsed_imports(path.read_text()) <= node_lib._imported(path)


def test_the_trainer_ships_the_modules_the_parser_would_have_shipped() -> None:
    todo = {"gpucluster"} | {
        f"gpucluster.train.{path.stem}" for path in (node_lib.PACKAGE_ROOT / "train").glob("*.py")
    }
    seen: set[Path] = set()
    while todo:
        path = node_lib._module_file(todo.pop())
        if path is not None and path not in seen:
            seen.add(path)
            todo |= parsed_imports(path.read_text())
    expected = {f"gpucluster/{path.relative_to(node_lib.PACKAGE_ROOT).as_posix()}" for path in seen}
    assert set(node_lib.trainer_sources()) == expected
    assert "gpucluster/train/__main__.py" in expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from gpucluster.train import (\n    model,  # the model\n    data as d,\n)\n",
            {"gpucluster.train", "gpucluster.train.model", "gpucluster.train.data"},
        ),
        ("def f():\n    import gpucluster.train.loop as loop, json\n", {"gpucluster.train.loop"}),
        ("from gpucluster import names  # why\n", {"gpucluster", "gpucluster.names"}),
        ("from gpucluster_other import x\nimport gpucluster_two\n", set()),
        ("from .relative import thing\nfrom os import path\n", set()),
    ],
)
def test_the_forms_an_import_takes(tmp_path: Path, source: str, expected: set[str]) -> None:
    module = tmp_path / "module.py"
    module.write_text(source)
    assert node_lib._imported(module) == expected == parsed_imports(source)

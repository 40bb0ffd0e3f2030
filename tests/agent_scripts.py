"""The agents as the nodes and the Lambda runtime run them: `python3 -m` in a copy of the
bundle's agents tree, or a function's package alone on sys.path, and the head's systemd units
read the way systemd reads them."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import boto3

from gpucluster.agent_package import agent_tree, handler_module, write_tree
from gpucluster.bootstrap.bundle import NODE_AGENTS
from gpucluster.rendering import render
from gpucluster.resolved.node_layout import AGENTS_TREE, NODE_LAYOUT
from tests.conftest import REPO

UNIT_TEMPLATES = REPO / "templates" / "systemd"
# Where the test environment's boto3 and botocore lie, all a node's python3 and the Lambda
# runtime have besides the standard library. The runs below add only this folder to a Python
# started with -S: the environment's site would install its editable gpucluster, which answers
# for any module of gpucluster that the tree lacks.
SDK = str(Path(boto3.__file__).resolve().parents[1])


def unit_names() -> list[str]:
    """Every gpucluster systemd unit, as the head node installs it."""
    return sorted(path.name.removesuffix(".j2") for path in UNIT_TEMPLATES.glob("gpucluster-*.j2"))


def unit_text(name: str) -> str:
    """A unit rendered from its template with the node's layout."""
    return render(f"systemd/{name}.j2", node=NODE_LAYOUT)


def bundle_tree(tmp_path: Path) -> Path:
    """The bundle's agents tree as a node unpacks it (NodeLayout.agents_dir), under `tmp_path`."""
    tree = tmp_path / "bundle" / AGENTS_TREE
    if not tree.exists():
        tree.mkdir(parents=True)
        write_tree(agent_tree(NODE_AGENTS), tree)
    return tree


def files_under(directory: Path) -> dict[str, str]:
    """Every file under `directory` by its path there, as agent_tree keys a tree."""
    return {
        path.relative_to(directory).as_posix(): path.read_text()
        for path in directory.rglob("*")
        if path.is_file()
    }


def run_from_bundle_copy(
    tmp_path: Path, module: str, *args: str, tools: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the agent `module` as its unit does, `python3 -m` in a copy of the bundle's agents
    tree under `tmp_path`, with this interpreter, the SDK and without the caller's GPUCLUSTER_*
    settings; programs in `tools` come first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_")}
    env |= {"PYTHONPATH": SDK, "PYTHONDONTWRITEBYTECODE": "1"}
    if tools is not None:
        env["PATH"] = f"{tools}:{env['PATH']}"
    return subprocess.run(
        [sys.executable, "-S", "-m", module, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=bundle_tree(tmp_path),
        check=False,
    )


def systemd_unit(name: str) -> configparser.ConfigParser:
    """A unit as the head node installs it, as sections of keys."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parser.read_string(unit_text(name))
    return parser


def run_in_package(
    tmp_path: Path, handler: str, code: str, settings: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run `code` as a Lambda function's runtime would: isolated Python (-I -S: no PYTHONPATH,
    no site) with the package of `handler` first on sys.path and the SDK after it, the caller's
    GPUCLUSTER_* settings dropped and `settings` set. The handler's module is imported first."""
    directory = tmp_path / "package"
    directory.mkdir()
    write_tree(agent_tree((handler_module(handler),)), directory)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_") and k != "PYTHONPATH"}
    env |= {**settings, "PYTHONDONTWRITEBYTECODE": "1"}
    prelude = (
        f"import sys; sys.path.insert(0, {str(directory)!r}); sys.path.append({SDK!r})\n"
        f"import {handler_module(handler)}\n"
    )
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", prelude + code],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

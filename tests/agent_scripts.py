"""The head node's agents as the node runs them: plain scripts in a copy of the bundle,
started by systemd units read the way systemd reads them."""

from __future__ import annotations

import ast
import configparser
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from gpucluster.agents import EKS_FUNCTION_MODULES
from gpucluster.rendering import render
from gpucluster.resolved.node_layout import NODE_LAYOUT
from tests.conftest import REPO

AGENTS = REPO / "gpucluster" / "agents"
UNIT_TEMPLATES = REPO / "templates" / "systemd"


def unit_names() -> list[str]:
    """Every gpucluster systemd unit, as the head node installs it."""
    return sorted(path.name.removesuffix(".j2") for path in UNIT_TEMPLATES.glob("gpucluster-*.j2"))


def unit_text(name: str) -> str:
    """A unit rendered from its template with the node's layout."""
    return render(f"systemd/{name}.j2", node=NODE_LAYOUT)


def run_from_bundle_copy(
    tmp_path: Path, script: str, *args: str, tools: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Copy the agents into a bundle directory under `tmp_path` and run `script` there with
    this interpreter, without the caller's GPUCLUSTER_* settings; programs in `tools` come first on PATH."""
    bundle = tmp_path / "bundle" / "agents"
    if not bundle.exists():
        bundle.mkdir(parents=True)
        for path in AGENTS.glob("*.py"):
            if path.name not in EKS_FUNCTION_MODULES:  # as the bundle has them
                shutil.copy(path, bundle / path.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if tools is not None:
        env["PATH"] = f"{tools}:{env['PATH']}"
    return subprocess.run(
        [sys.executable, str(bundle / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )


def systemd_unit(name: str) -> configparser.ConfigParser:
    """A unit as the head node installs it, as sections of keys."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # systemd keys are case-sensitive
    parser.read_string(unit_text(name))
    return parser


def assert_package_imports_only_itself_and_the_sdk(package: Sequence[str]) -> None:
    """A Lambda function's package (agent module file names) imports nothing but its own
    modules, the standard library and the SDK the runtime includes."""
    allowed = set(sys.stdlib_module_names) | {"boto3", "botocore"} | {n.removesuffix(".py") for n in package}
    for name in package:
        for node in ast.walk(ast.parse((AGENTS / name).read_text())):
            if isinstance(node, ast.Import):
                roots = {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            else:
                continue
            assert roots <= allowed, f"{name} imports {roots - allowed}"


def run_in_package(
    tmp_path: Path, package: Sequence[str], code: str, settings: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """Run `code` as a Lambda function's runtime would: isolated Python (-I: no site-packages
    but the SDK the test interpreter has, no PYTHONPATH) with a copy of exactly `package` (agent
    module file names) first on sys.path, the caller's GPUCLUSTER_* settings dropped and
    `settings` set."""
    directory = tmp_path / "package"
    directory.mkdir()
    for name in package:
        shutil.copy(AGENTS / name, directory / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUCLUSTER_") and k != "PYTHONPATH"}
    env |= {**settings, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(directory)!r})\n{code}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )

"""The built wheel is the whole product: installed into a clean virtual environment, away
from the checkout, `gpucluster synth` renders the default example to the same templates,
byte for byte, as the checkout does. The templates, the Slurm source, cdk.json's context and
the stacks and constructs linked in from the top of the repository must all be in it.

The clean environment takes the checkout environment's installed dependencies through a
.pth line (a .pth in that folder is not read, so the checkout's editable gpucluster stays
out) instead of installing them again: the check is about what the wheel carries.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from gpucluster.synth.app import SynthResult
from tests.conftest import REPO

# What the build reads from the checkout; the links inside gpucluster/ come along as links.
BUILD_INPUTS = (
    "pyproject.toml",
    "README.md",
    "cdk.json",
    "gpucluster",
    "stacks",
    "constructs_lib",
    "templates",
)


def _run(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, f"{argv} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    dist = tmp_path_factory.mktemp("dist")
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--no-build-isolation",
        "-w",
        dist,
        source,
        cwd=source,
    )
    [built] = dist.glob("gpucluster-*.whl")
    return built


@pytest.fixture(scope="module")
def clean_env(wheel: Path, tmp_path_factory) -> Path:
    """A virtual environment with the wheel installed and the checkout's dependencies on its
    path; returns its bin/ folder."""
    venv = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=venv)
    python = venv / "bin" / "python"
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", wheel, cwd=venv)
    site = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=venv).strip()
    )
    (site / "checkout_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv / "bin"


def _clean(env_bin: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env["PATH"] = f"{env_bin}{os.pathsep}{env['PATH']}"
    return env


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [top_level] = [name for name in names if name.endswith(".dist-info/top_level.txt")]
        assert archive.read(top_level).decode().split() == ["gpucluster"]
    assert {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")} == {
        "gpucluster"
    }
    for member in (
        "gpucluster/stacks/cluster_stack.py",
        "gpucluster/constructs_lib/eks/node_groups.py",
        "gpucluster/templates/slurm/slurm.conf.j2",
        "gpucluster/data/cdk.json",
        "gpucluster/data/slurm-25.11.7.tar.gz",
    ):
        assert member in names, f"the wheel lacks {member}"


def test_the_installed_package_is_the_wheels_and_stacks_is_no_global_name(
    clean_env: Path, tmp_path: Path
) -> None:
    probe = (
        "import importlib.util, gpucluster, gpucluster.stacks.cluster_stack\n"
        "print(gpucluster.__file__)\n"
        "print(importlib.util.find_spec('stacks'), importlib.util.find_spec('constructs_lib'))\n"
    )
    out = _run(clean_env / "python", "-c", probe, cwd=tmp_path, env=_clean(clean_env)).splitlines()
    assert Path(out[0]).is_relative_to(clean_env.parent), out
    assert out[1] == "None None"


def test_synth_from_the_wheel_matches_the_checkout(
    clean_env: Path, tmp_path: Path, synthesized: dict[str, SynthResult]
) -> None:
    config = tmp_path / "default.yaml"
    shutil.copy2(REPO / "examples" / "default.yaml", config)
    _run(
        clean_env / "gpucluster", "synth", config, "-o", tmp_path / "out", cwd=tmp_path, env=_clean(clean_env)
    )
    checkout = synthesized["default"].outdir
    expected = sorted(path.name for path in checkout.glob("*.template.json"))
    assert sorted(path.name for path in (tmp_path / "out").glob("*.template.json")) == expected
    for name in expected:
        assert (tmp_path / "out" / name).read_bytes() == (checkout / name).read_bytes(), f"{name} differs"

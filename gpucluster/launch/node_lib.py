"""What compute nodes keep under NodeLayout.lib_dir for the jobs: the GPU environment file and the
reference trainer's source.

sbatch ships only the job script to the first node, so anything else a job's ranks run must be
on every compute node already. The trainer (`python -m gpucluster.train`) is pure Python on
top of torch and pydantic: its package tree goes to NodeLayout.lib_dir/python, which the torchrun job
puts first on PYTHONPATH on the host and mounts read-only into a container. Its packages come
from the job's Python environment (TRAIN_REQUIREMENTS, on the host) or the training image
(whose recipe installs the same pins).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from gpucluster.launch.gpu_env import gpu_env_path, render_gpu_env
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.resolved.node_layout import NODE_LAYOUT

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
# The trainer's package; what it imports from the rest of gpucluster is followed from here
# (tests/launch/test_torchrun_checks.py runs it from the files this gathers alone).
TRAINER_PACKAGE = "gpucluster.train"
# What the trainer needs besides torch, pinned: the host environment the torchrun job builds and
# the training image install exactly this.
TRAINER_REQUIREMENTS = ("pydantic==2.14.4",)
# torch's companion in the host environment: torch imports numpy when it is there and warns on
# every rank when it is not (the trainer saves numpy's RNG state with the others). NGC images
# bring their own, built with their torch, which the recipe leaves alone.
HOST_COMPANIONS = ("numpy==2.4.6",)


def trainer_dir(lib_dir: str = NODE_LAYOUT.lib_dir) -> str:
    return f"{lib_dir}/python"


def _module_file(module: str) -> Path | None:
    """The source of a gpucluster module (a package's __init__.py), or None."""
    parts = module.split(".")[1:]
    candidates = [PACKAGE_ROOT.joinpath(*parts, "__init__.py")]
    if parts:
        candidates.append(PACKAGE_ROOT.joinpath(*parts[:-1], f"{parts[-1]}.py"))
    return next((candidate for candidate in candidates if candidate.is_file()), None)


# `import gpucluster...` and `from gpucluster... import NAMES` at any indentation (lazy imports
# count too), NAMES possibly a parenthesized list over several lines. A regular expression, not
# ast.parse: parsing the trainer's ~30 modules was about 3% of a synth's CPU time, and
# tests/launch/test_node_lib.py checks it finds what the parser finds in every module.
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+(?P<module>gpucluster[\w.]*)[ \t]+import[ \t]+(?P<names>\([^)]*\)|[^\n]*)"
    r"|import[ \t]+(?P<modules>[^\n]*))",
    re.MULTILINE,
)


def _names(listed: str) -> set[str]:
    """The imported names of `a, b as c  # comment` or `(a,\n b,\n)`."""
    listed = re.sub(r"#[^\n]*", "", listed).strip().strip("()")
    return {item.split()[0] for item in listed.split(",") if item.strip()}


def _imported(path: Path) -> set[str]:
    """The gpucluster modules `path` imports; a name imported from a module is listed as
    `module.name` too, since it may be a submodule."""
    found: set[str] = set()
    for match in _IMPORT.finditer(path.read_text()):
        if match["module"]:
            found.add(match["module"])
            found.update(f"{match['module']}.{name}" for name in _names(match["names"]))
        else:
            found.update(_names(match["modules"]))
    return {name for name in found if name.split(".")[0] == "gpucluster"}


@functools.cache
def trainer_sources() -> Mapping[str, str]:
    """The trainer's package and every gpucluster module it imports, followed to the end,
    keyed by their path under trainer_dir(). Read once per process, not once per compute
    group of every synth."""
    package = PACKAGE_ROOT / Path(*TRAINER_PACKAGE.split(".")[1:])
    todo = {"gpucluster"} | {f"{TRAINER_PACKAGE}.{path.stem}" for path in package.glob("*.py")}
    seen: dict[Path, None] = {}
    while todo:
        path = _module_file(todo.pop())
        if path is None or path in seen:
            continue  # a name imported from a module, not a module of its own
        seen[path] = None
        todo |= _imported(path)
    return MappingProxyType(
        {f"gpucluster/{path.relative_to(PACKAGE_ROOT).as_posix()}": path.read_text() for path in sorted(seen)}
    )


def python_requirements(resolved: ResolvedCluster) -> tuple[str, ...]:
    """pip requirements of the torchrun job's host environment."""
    return (f"torch=={resolved.software.torch_version}", *TRAINER_REQUIREMENTS, *HOST_COMPANIONS)


def node_lib_files(
    resolved: ResolvedCluster, group: ResolvedGroup, lib_dir: str = NODE_LAYOUT.lib_dir
) -> dict[str, str]:
    """Every file a node of `group` keeps under lib_dir, keyed by its absolute path."""
    files = {gpu_env_path(lib_dir): render_gpu_env(resolved, group)}
    python = trainer_dir(lib_dir)
    files.update({f"{python}/{path}": text for path, text in trainer_sources().items()})
    return files

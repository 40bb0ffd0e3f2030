"""The package imports downwards only: model and catalog at the bottom, what the verbs
do above them, the CLI on top (README, Layout). A new module must be given a layer here.

Imports under `if TYPE_CHECKING:` count too: a type a module names is a dependency.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.conftest import REPO

# Lowest first; a module may import its own layer and the layers below it.
LAYERS: dict[str, int] = {
    # the one error type, the catalog, how tables and progress print, how output directories
    # are written, and the names the head node's agents share (they ship as the package tree
    # of what they import, which holds nothing else of gpucluster)
    "gpucluster.bad_input": 0,
    "gpucluster.tables": 0,
    "gpucluster.progress": 0,
    "gpucluster.output_files": 0,
    # an environment problem (exit 1) and plain wording of a parser's messages
    "gpucluster.env_problem": 0,
    "gpucluster.plain_messages": 0,
    # the one reader of JSON a person hands gpucluster (depth and syntax refused as one line)
    "gpucluster.json_input": 0,
    # command lines printed for a person to paste into a shell: every word quoted
    "gpucluster.command_lines": 0,
    "gpucluster.catalog": 0,
    "gpucluster.cpu_topology": 0,
    "gpucluster.efa": 0,
    # where the package keeps the files it ships (templates, data, the agents' sources)
    "gpucluster.package_files": 0,
    # the agents' package trees (the nodes' and each EKS function's), from their entry modules
    "gpucluster.agent_package": 0,
    "gpucluster.agents.cluster_names": 0,
    # the drain reasons gpucluster's checks set and node_repair reads
    "gpucluster.agents.health_reasons": 0,
    # every CloudWatch metric's name, unit and dimensions: the collectors publish them, the
    # dashboard, alarms and `gpucluster top` read them
    "gpucluster.agents.metric_names": 0,
    # the pinned Slurm release and its source, which the config checks software.slurm against
    "gpucluster.slurm_release": 0,
    # the lines the validation jobs print, shared by the jobs (rendered) and the gate (parsed)
    "gpucluster.job_output": 0,
    # DCGM's diagnostic levels, their bounds and how its report is read (config, checks, jobs)
    "gpucluster.dcgm": 0,
    # where gpucluster keeps its files on a node (the config refuses a mount point over it)
    "gpucluster.node_root": 0,
    # the vendored RDS CA bundle, its pin and the regions it covers (the config refuses others)
    "gpucluster.rds_ca": 0,
    # the munge key's length: Secrets Manager generates it (infra), the secret scan knows it
    "gpucluster.munge_key": 0,
    # the EKS system node group and the VPC CNI's addresses per node (config and EKS stack)
    "gpucluster.eks_nodes": 0,
    # the config model and its reader, the names derived from it, the Jinja environment
    "gpucluster.config": 1,
    "gpucluster.names": 1,
    "gpucluster.rendering": 1,
    # what the node-file renderer hands the infrastructure (bundle, user data), imported by both
    "gpucluster.node_files": 1,
    # a verb's --group, read against the config in one place
    "gpucluster.group_option": 1,
    # AWS clients made in one place and their failures as one line
    "gpucluster.aws": 1,
    # the config resolved once: each group's catalog entry, interfaces and Slurm names, the
    # cluster's names and Slurm release; both renderers below read it, neither derives them
    "gpucluster.resolved": 2,
    # what a cluster is made of: Slurm's files, the node bootstrap, the validation jobs, the
    # verdict on their output, the training image recipe, the head node's agents
    "gpucluster.slurm": 2,
    # the Kubernetes manifests of the cluster on EKS (Slinky), from the resolved cluster
    "gpucluster.eks": 2,
    "gpucluster.bootstrap": 2,
    "gpucluster.jobs": 2,
    "gpucluster.gate": 2,
    "gpucluster.container": 2,
    "gpucluster.agents": 2,
    # the reference trainer (runs on the nodes; imports nothing above the bottom)
    "gpucluster.train": 2,
    # the torchrun job the bundle carries, and the parallel-layout arithmetic
    "gpucluster.launch": 2,
    "gpucluster.plan": 2,
    # CloudFormation: constructs, stacks (constructs_lib/ and stacks/ at the top of the
    # repository, linked into the package), the app, and what reads its output
    "gpucluster.constructs_lib": 3,
    "gpucluster.stacks": 3,
    "gpucluster.synth": 3,
    "gpucluster.diff": 3,
    "gpucluster.scan": 3,
    # the workstation's AWS verbs: Capacity Blocks, preflight, AMI pinning
    "gpucluster.capacity": 3,
    "gpucluster.preflight": 3,
    "gpucluster.ami": 3,
    # what the head node reports of its compute nodes (`gpucluster nodes`)
    "gpucluster.nodes": 3,
    # each person's way in through Session Manager, as deployed (`gpucluster users access`)
    "gpucluster.access": 3,
    # `gpucluster top`: the cluster's metrics read back from CloudWatch
    "gpucluster.monitor": 3,
    # the command line
    "gpucluster.cli": 4,
    "gpucluster.__main__": 4,
    "gpucluster": 4,  # the package's own __init__ only
}
SOURCES = ("gpucluster",)


def layer_of(module: str) -> int | None:
    """The layer of the longest LAYERS prefix naming `module` (a package or the module)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if end == 1 and module.startswith("gpucluster."):
            return None  # a module right under gpucluster/ must be named in LAYERS itself
        found = LAYERS.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def module_name(path: Path) -> str:
    relative = path.relative_to(REPO).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


def project_imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import of gpucluster in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from gpucluster import names` imports the module gpucluster.names
            names = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        found.extend((node.lineno, name) for name in names if name.split(".")[0] in SOURCES)
    return found


def _imported_layer(name: str) -> int:
    """An import of a module with no layer counts as the top: it has to be placed first."""
    layer = layer_of(name)
    return LAYERS["gpucluster"] if layer is None else layer


def source_files() -> list[Path]:
    """Every module of the package, those of stacks/ and constructs_lib/ through the package's
    links to them, so that each is named as it is imported."""
    return sorted(
        Path(folder) / name
        for top in SOURCES
        for folder, _, names in os.walk(REPO / top, followlinks=True)
        for name in names
        if name.endswith(".py")
    )


@pytest.mark.parametrize("path", source_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_imports_go_downwards_only(path: Path) -> None:
    module = module_name(path)
    own = layer_of(module)
    assert own is not None, f"{module} has no layer: add it to LAYERS in {Path(__file__).name}"
    upward = [
        f"{path.relative_to(REPO)}:{line} imports {name} (layer {layer}) from layer {own}"
        for line, name in project_imports(path)
        if (layer := _imported_layer(name)) > own
    ]
    assert not upward, "\n".join(upward)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import json\nfrom gpucluster.cli import app\nfrom gpucluster import names\n")
    assert project_imports(probe) == [(2, "gpucluster.cli.app"), (3, "gpucluster.names")]
    config_module = module_name(REPO / "gpucluster" / "config" / "loader.py")
    assert config_module == "gpucluster.config.loader"
    assert layer_of("gpucluster.cli.app") == 4 > layer_of(config_module) == 1
    assert layer_of("gpucluster.brand_new") is None  # so its test fails until it has a layer

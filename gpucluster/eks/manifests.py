"""Every Kubernetes file of a cluster on EKS, as text keyed by its path under `k8s/`: the
values of the vendored charts and the objects gpucluster writes itself."""

from __future__ import annotations

from typing import Any

import yaml

from gpucluster.eks import accounting_password, accounts, slinky_values, storage, topology
from gpucluster.resolved import ResolvedCluster

# The vendored charts (gpucluster/data/slinky/<tag>/helm/<chart>) these values are for.
SLINKY_TAG = "v1.2.1"


class _Dumper(yaml.SafeDumper):
    """Writes multi-line strings (config files) as literal blocks, so they read as files."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _str)


def _yaml(documents: list[dict[str, Any]]) -> str:
    return "---\n".join(yaml.dump(doc, Dumper=_Dumper, sort_keys=False) for doc in documents)


def objects(resolved: ResolvedCluster, fsx: storage.FsxFacts) -> list[dict[str, Any]]:
    """The objects gpucluster applies itself, before the `slurm` chart whose pods use them, and
    the topology writer's access to nodes (topology.writer_rbac) and, with a database, the
    password writer's to its Secret (accounting_password.writer_rbac): the EKS stack applies them
    with the deployed file system's facts, synth writes them with placeholders."""
    return [
        storage.namespace(),
        storage.state_storage_class(),
        *storage.fsx_volume(resolved, fsx),
        *filter(None, [accounts.configmap(resolved)]),
        *topology.writer_rbac(),
        *accounting_password.writer_rbac(resolved),
    ]


def render_manifests(resolved: ResolvedCluster, fsx: storage.FsxFacts | None = None) -> dict[str, str]:
    """Relative path -> file text. `fsx`: the deployed file system's facts; None writes the
    placeholders that name where they come from (storage.placeholder_facts)."""
    facts = fsx or storage.placeholder_facts(resolved)
    return {
        f"values/slurm-{SLINKY_TAG}.yaml": _yaml([slinky_values.slurm_values(resolved)]),
        f"values/slurm-operator-{SLINKY_TAG}.yaml": _yaml([slinky_values.operator_values()]),
        "objects.yaml": _yaml(objects(resolved, facts)),
    }

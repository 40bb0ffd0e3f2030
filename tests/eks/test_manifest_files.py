"""render_manifests: which files synth writes, the FSx facts, and the labels module the EKS
stack shares."""

from __future__ import annotations

import dataclasses

import yaml

from gpucluster.eks import labels, storage
from gpucluster.eks.manifests import render_manifests
from gpucluster.eks.slinky_values import nodeset_values
from tests.eks.conftest import shape_cluster


def test_manifest_files_and_placeholders():
    cluster = shape_cluster("p5.48xlarge", True)
    files = render_manifests(cluster)
    assert sorted(files) == ["objects.yaml", "values/slurm-operator-v1.2.1.yaml", "values/slurm-v1.2.1.yaml"]
    volume = next(d for d in yaml.safe_load_all(files["objects.yaml"]) if d["kind"] == "PersistentVolume")
    attributes = volume["spec"]["csi"]["volumeAttributes"]
    # Until deploy, each fact names the SSM parameter the Storage stack writes it to.
    assert cluster.names.storage_parameters["fsx_mount_name"] in attributes["mountname"]
    assert cluster.names.storage_parameters["fsx_dns_name"] in attributes["dnsname"]


def test_deployed_fsx_facts_replace_the_placeholders():
    cluster = shape_cluster("p5.48xlarge", True)
    facts = storage.FsxFacts("fs-0123456789abcdef0", "fs-0123.fsx.us-east-2.amazonaws.com", "abcdefgh")
    objects = list(yaml.safe_load_all(render_manifests(cluster, facts)["objects.yaml"]))
    (volume,) = [d for d in objects if d["kind"] == "PersistentVolume"]
    assert volume["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
    assert volume["spec"]["csi"]["volumeAttributes"] == {
        "dnsname": "fs-0123.fsx.us-east-2.amazonaws.com",
        "mountname": "abcdefgh",
    }
    assert volume["spec"]["capacity"]["storage"] == f"{cluster.fsx_lustre.storage_gib}Gi"


def test_without_fsx_no_volume_is_written_or_mounted():
    cluster = shape_cluster("p5.48xlarge", True)
    bare = dataclasses.replace(cluster, fsx_lustre=None)
    objects = list(yaml.safe_load_all(render_manifests(bare)["objects.yaml"]))
    assert [d["kind"] for d in objects] == ["Namespace", "StorageClass", "ClusterRole", "ClusterRoleBinding"]
    values = nodeset_values(bare, bare.groups[0])
    assert values["podSpec"]["volumes"] == [] and values["slurmd"]["volumeMounts"] == []


def test_node_group_taints_in_eks_spelling_and_as_tolerations():
    (taint,) = labels.compute_group_taints("gpu")
    assert taint.eks_effect == "NO_SCHEDULE"
    assert taint.toleration() == {
        "key": "nvidia.com/gpu",
        "operator": "Equal",
        "value": "gpu",
        "effect": "NoSchedule",
    }
    assert labels.compute_group_labels("gpu") == {"gpucluster.io/compute-group": "gpu"}
    assert labels.system_labels() == {"gpucluster.io/role": "system"}

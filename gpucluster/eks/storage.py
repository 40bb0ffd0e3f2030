"""The volumes the Slinky pods mount: the cluster's FSx for Lustre file system as a static
PersistentVolume of the FSx CSI driver, and the EBS class that holds slurmctld's state.

The Storage stack creates the file system (RETAIN); its id, DNS name and mount name are
known at deploy, so synth renders them as named placeholders unless given.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpucluster.resolved import ResolvedCluster

NAMESPACE = "slurm"
FSX_VOLUME = "fsx"
FSX_CLAIM = "fsx"
FSX_CSI_DRIVER = "fsx.csi.aws.com"
EBS_CSI_PROVISIONER = "ebs.csi.aws.com"
STATE_STORAGE_CLASS = "gpucluster-state-gp3"
# The Kubernetes Secret (in NAMESPACE) holding the accounting database's password under
# ACCOUNTING_PASSWORD_KEY: the EKS stack copies it there from the database's Secrets
# Manager secret, whose JSON names the password the same way.
ACCOUNTING_PASSWORD_SECRET = "accounting-db"
ACCOUNTING_PASSWORD_KEY = "password"


@dataclass(frozen=True)
class FsxFacts:
    file_system_id: str
    dns_name: str
    mount_name: str


def placeholder_facts(resolved: ResolvedCluster) -> FsxFacts:
    """What synth writes before the file system exists: the SSM parameters that will hold it."""
    params = resolved.names.storage_parameters
    return FsxFacts(
        file_system_id="${fsx_id}",
        dns_name=f"${{ssm:{params['fsx_dns_name']}}}",
        mount_name=f"${{ssm:{params['fsx_mount_name']}}}",
    )


def fsx_volume(resolved: ResolvedCluster, facts: FsxFacts) -> list[dict[str, Any]]:
    """The PersistentVolume and its claim; [] without `storage.fsx_lustre`."""
    fsx = resolved.fsx_lustre
    if fsx is None:
        return []
    pv_name = f"{resolved.name}-fsx"
    capacity = {"storage": f"{fsx.storage_gib}Gi"}
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": capacity,
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            # The file system outlives the cluster (the Storage stack retains it).
            "persistentVolumeReclaimPolicy": "Retain",
            # Empty: bound statically, never provisioned by a default class.
            "storageClassName": "",
            "mountOptions": ["flock"],
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": facts.file_system_id,
                "volumeAttributes": {"dnsname": facts.dns_name, "mountname": facts.mount_name},
            },
        },
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": FSX_CLAIM, "namespace": NAMESPACE},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": capacity},
        },
    }
    return [volume, claim]


def state_storage_class() -> dict[str, Any]:
    """gp3 EBS for slurmctld's StateSaveLocation; Retain keeps the queue if the claim goes."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STATE_STORAGE_CLASS},
        "provisioner": EBS_CSI_PROVISIONER,
        "parameters": {"type": "gp3", "encrypted": "true"},
        "reclaimPolicy": "Retain",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowVolumeExpansion": True,
    }


def namespace() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}

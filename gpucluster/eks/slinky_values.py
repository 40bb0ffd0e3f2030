"""The `slurm` chart's values for a cluster: one NodeSet per compute group, a LoginSet, the
controller's state on EBS, the REST API, partitions, gres.conf and plugstack.conf.

Every per-group fact comes from the EC2 path's functions, so a node registers on EKS as it
does on EC2: the slurmd `--conf` line (Gres, features, memory, socket layout) is
node_conf.slurmd_conf_line and the partitions are slurm.partitions. The container limits
are the catalog's GPU count and the group's EFA interface count (resolved.groups), the
counts the device plugins advertise per node. gres.conf and plugstack.conf differ from the
EC2 path's, for the reasons given where they are defined.
"""

from __future__ import annotations

from typing import Any

from gpucluster.eks import accounts, images, labels, topology
from gpucluster.eks.storage import (
    ACCOUNTING_PASSWORD_KEY,
    ACCOUNTING_PASSWORD_SECRET,
    FSX_CLAIM,
    FSX_VOLUME,
    STATE_STORAGE_CLASS,
)
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.slurm.conf import slurmd_conf_line
from gpucluster.slurm.partitions import partitions

GPU_RESOURCE = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# slurmctld's StateSaveLocation volume (the chart's default size).
STATE_SIZE = "4Gi"
# The -pyxis images' build of Slurm (Slurm's debian/rules) has no NVML, so gpu/nvml does not
# exist there; gpu/nvidia reads the driver's /proc and /dev files and needs no library.
# (Slinky v1.2.1 docs/installation.md, "With GPUs", recommends the same.)
GRES_CONF = "AutoDetect=nvidia\n"
PLUGSTACK_CONF = f"include {images.PYXIS_PLUGSTACK_GLOB}\n"


def gpu_limits(group: ResolvedGroup) -> dict[str, int]:
    """The slurmd container's limits: every GPU and every EFA interface of the node, as the
    NVIDIA and EFA device plugins count them. Fewer would hide devices Slurm's Gres counts."""
    limits = {GPU_RESOURCE: group.instance.gpu_count}
    if group.efa_count:
        limits[EFA_RESOURCE] = group.efa_count
    return limits


def nodeset_name(group: ResolvedGroup) -> str:
    return group.name


def _fsx_mounts(resolved: ResolvedCluster) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    fsx = resolved.fsx_lustre
    if fsx is None:
        return [], []
    volumes = [{"name": FSX_VOLUME, "persistentVolumeClaim": {"claimName": FSX_CLAIM}}]
    return volumes, [{"name": FSX_VOLUME, "mountPath": fsx.mount_point}]


def _system_pod() -> dict[str, Any]:
    return {"nodeSelector": labels.system_labels()}


def nodeset_values(resolved: ResolvedCluster, group: ResolvedGroup) -> dict[str, Any]:
    version = resolved.slurm.version
    volumes, mounts = _fsx_mounts(resolved)
    return {
        "enabled": True,
        "replicas": group.count,
        "slurmd": {
            "image": images.slurm_image(images.SLURMD, version).values(),
            "resources": {"limits": gpu_limits(group)},
            "volumeMounts": mounts,
        },
        "logfile": {"image": images.alpine().values()},
        "extraConf": slurmd_conf_line(resolved, group),
        "podSpec": {
            "nodeSelector": labels.compute_group_labels(group.name),
            "tolerations": [taint.toleration() for taint in labels.compute_group_taints(group.name)],
            "volumes": volumes,
        },
    }


def _partitions(resolved: ResolvedCluster) -> dict[str, Any]:
    by_ec2_nodeset = {f"ns_{group.name}": nodeset_name(group) for group in resolved.groups}
    result: dict[str, Any] = {}
    for part in partitions(resolved):
        result[part.name] = {
            "enabled": True,
            "nodesets": [by_ec2_nodeset[name] for name in part.nodesets],
            "configMap": {
                "Default": "YES" if part.default else "NO",
                "DefCpuPerGPU": str(part.def_cpu_per_gpu),
                "DefMemPerGPU": str(part.def_mem_per_gpu),
                "DefaultTime": part.default_time,
                "MaxTime": part.max_time,
            },
        }
    return result


def accounting_values(resolved: ResolvedCluster) -> dict[str, Any]:
    """slurmdbd: a pod writing to the cluster's database, or the external slurmdbd; off without
    `accounting`. The database's address is known at deploy: synth names its SSM parameter."""
    accounting = resolved.accounting
    if accounting is None:
        return {"enabled": False}
    database = accounting.database
    if database is None:
        return {
            "enabled": True,
            "external": True,
            "externalConfig": {"host": accounting.external_host, "port": accounting.slurmdbd_port},
        }
    return {
        "enabled": True,
        "slurmdbd": {"image": images.slurm_image(images.SLURMDBD, resolved.slurm.version).values()},
        "storageConfig": {
            "host": f"${{ssm:{database.host_parameter}}}",
            "port": database.port,
            "database": database.database_name,
            "username": database.user,
            "passwordKeyRef": {"name": ACCOUNTING_PASSWORD_SECRET, "key": ACCOUNTING_PASSWORD_KEY},
        },
        "podSpec": _system_pod(),
    }


def slurm_values(resolved: ResolvedCluster) -> dict[str, Any]:
    """Values for the vendored `slurm` chart."""
    version = resolved.slurm.version
    volumes, mounts = _fsx_mounts(resolved)
    return {
        "clusterName": resolved.name,
        "configFiles": {
            "gres.conf": GRES_CONF,
            "plugstack.conf": PLUGSTACK_CONF,
            topology.TOPOLOGY_CONF: topology.topology_conf(resolved.name),
        },
        "controller": {
            "slurmctld": {"image": images.slurm_image(images.SLURMCTLD, version).values()},
            "reconfigure": {"image": images.slurm_image(images.SLURMCTLD, version).values()},
            "logfile": {"image": images.alpine().values()},
            "extraConfMap": {"GresTypes": "gpu", "TopologyPlugin": topology.topology_plugin()},
            "persistence": {
                "enabled": True,
                "storageClassName": STATE_STORAGE_CLASS,
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": STATE_SIZE}},
            },
            "podSpec": {**_system_pod(), **accounts.controller_pod(resolved)},
        },
        "restapi": {
            "slurmrestd": {"image": images.slurm_image(images.SLURMRESTD, version).values()},
            "podSpec": _system_pod(),
        },
        "loginsets": {
            "login": {
                "enabled": True,
                "replicas": resolved.login_nodes.count,
                "login": {
                    "image": images.slurm_image(images.LOGIN, version).values(),
                    "volumeMounts": mounts,
                    # Enroot in the login container needs it (Slinky docs/usage/pyxis.md).
                    "securityContext": {"privileged": True},
                },
                "initconf": {"image": images.alpine().values()},
                "podSpec": {**_system_pod(), "volumes": volumes},
                # Reached from inside the VPC only; the chart's default is a public load balancer.
                "service": {"spec": {"type": "ClusterIP"}},
            }
        },
        "accounting": accounting_values(resolved),
        "nodesets": {nodeset_name(group): nodeset_values(resolved, group) for group in resolved.groups},
        "partitions": _partitions(resolved),
    }


def operator_values() -> dict[str, Any]:
    """Values for the vendored `slurm-operator` chart; its CRDs come from their own chart."""
    return {
        "crds": {"enabled": False},
        "operator": {"nodeSelector": labels.system_labels()},
        "webhook": {"nodeSelector": labels.system_labels()},
    }

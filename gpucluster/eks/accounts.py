"""The config's accounts, users and QOS on EKS: the EC2 head's accounts agent, run beside
slurmctld in the controller pod.

On EC2 the head runs gpucluster.agents.accounts with the bundle's accounts.json
(bootstrap.accounting.accounts_file) once slurmctld has registered. On EKS the same agent's
package tree (gpucluster.agent_package) and the same JSON travel in a ConfigMap, and a
container in the controller pod runs them. It is made like the operator's own `reconfigure`
container there, which runs `scontrol reconfigure` with the operator's `slurm-etc` volume
(slurm.conf, the auth/slurm key) and slurmctld's auth socket directory mounted
(internal/builder/controllerbuilder/controller_app.go); the pod runs as SlurmUser, whom
slurmdbd treats as an administrator, and Slinky's own tests run sacctmgr in that pod
(test/e2e, `kubectl exec slurm-controller-0 -- sacctmgr ...`). The slurmctld image has
Python (its supervisor package depends on python3) and sacctmgr (slurm-smd-client). The
agent is idempotent, so the container applies it again every INTERVAL_SECONDS (a changed
ConfigMap reaches the volume without a restart) and retries every RETRY_SECONDS while
slurmdbd or slurmctld's gres/gpu registration is not there yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpucluster.agent_package import agent_tree
from gpucluster.bootstrap.accounting import ACCOUNTS_STATE, AGENT, accounts_file
from gpucluster.eks import images
from gpucluster.eks.storage import NAMESPACE
from gpucluster.resolved import ResolvedCluster

CONFIGMAP = "gpucluster-accounts"
CONTAINER = "gpucluster-accounts"
# The pod's own path (the nodes' NODE_ROOT means nothing in a container).
MOUNT = "/usr/local/share/gpucluster-accounts"
STATE_FILE = Path(ACCOUNTS_STATE).name
# The operator's volumes (internal/builder/common/const.go): slurm.conf and slurm.key, and
# the directory of slurmctld's auth socket.
SLURM_ETC_VOLUME = "slurm-etc"
SLURM_ETC_DIR = "/etc/slurm"
AUTH_SOCKET_VOLUME = "slurm-authsocket"
AUTH_SOCKET_DIR = "/run/slurmctld"
INTERVAL_SECONDS = 600
RETRY_SECONDS = 30


def config_key(path: str) -> str:
    """The ConfigMap key of a file of the agent's tree: a key holds no '/', so the volume's
    items put each file back at its path."""
    return path.replace("/", ".")


def agent_files() -> dict[str, str]:
    """The agent's package tree, by ConfigMap key."""
    return {config_key(path): text for path, text in agent_tree((AGENT,)).items()}


def _volume_items() -> list[dict[str, str]]:
    paths = [*agent_tree((AGENT,)), STATE_FILE]
    return [{"key": config_key(path), "path": path} for path in paths]


def configmap(resolved: ResolvedCluster) -> dict[str, Any] | None:
    """The agent's package tree and the desired state; None without `accounting:`."""
    state = accounts_file(resolved)
    if not state:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIGMAP, "namespace": NAMESPACE},
        "data": {**agent_files(), STATE_FILE: state[ACCOUNTS_STATE]},
    }


def command() -> list[str]:
    # python3 -m imports the agent and its package from the working directory.
    loop = (
        f"cd {MOUNT} && while :; do python3 -m {AGENT} {MOUNT}/{STATE_FILE} "
        f"&& sleep {INTERVAL_SECONDS} || sleep {RETRY_SECONDS}; done"
    )
    return ["/bin/sh", "-c", loop]


def controller_pod(resolved: ResolvedCluster) -> dict[str, Any]:
    """What the controller's podSpec adds: the agent's container and its ConfigMap volume;
    nothing without `accounting:`."""
    if configmap(resolved) is None:
        return {}
    return {
        "containers": [
            {
                "name": CONTAINER,
                "image": images.slurm_image(images.SLURMCTLD, resolved.slurm.version).reference(),
                "command": command(),
                "volumeMounts": [
                    {"name": SLURM_ETC_VOLUME, "mountPath": SLURM_ETC_DIR, "readOnly": True},
                    {"name": AUTH_SOCKET_VOLUME, "mountPath": AUTH_SOCKET_DIR, "readOnly": True},
                    {"name": CONFIGMAP, "mountPath": MOUNT, "readOnly": True},
                ],
            }
        ],
        "volumes": [{"name": CONFIGMAP, "configMap": {"name": CONFIGMAP, "items": _volume_items()}}],
    }

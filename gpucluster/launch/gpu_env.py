"""The one environment every GPU job runs in: NCCL's network plugin and libfabric.

A compute node holds one rendered file, NodeLayout.lib_dir/gpu-env.sh, for its group. The nccl
validation jobs and the torchrun job source it in every process that runs NCCL, on the host
and inside a container (the directory is mounted read-only), so the gate judges the network
set-up that training then uses. No job sets these variables itself (tests/launch/test_gpu_env.py).

On an EFA group it also names the network NCCL must use (NCCL_NET): without the plugin, or
with a libfabric that finds no EFA device, NCCL then stops with an error instead of running
over TCP sockets and saying so only in an INFO line.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.resolved.node_layout import NODE_LAYOUT

GPU_ENV_FILE = "gpu-env.sh"
TEMPLATE = "jobs/gpu-env.sh.j2"

# libfabric (EFA provider) and the aws-ofi-nccl plugin, where the EFA installer puts them on
# the DLAMI and in the training image; on Debian-family systems the plugin may sit one level
# down, under the multiarch directory.
EFA_DIR = "/opt/amazon/efa"
OFI_NCCL_DIR = "/opt/amazon/ofi-nccl"
LIBRARY_DIRS = (f"{OFI_NCCL_DIR}/lib", f"{OFI_NCCL_DIR}/lib/x86_64-linux-gnu", f"{EFA_DIR}/lib")
EFA_BIN_DIR = f"{EFA_DIR}/bin"
# NCCL loads libnccl-net-<NCCL_NET_PLUGIN>.so: aws-ofi-nccl's name. Newer NGC images select
# HPC-X's plugin (spcx, no EFA) unless told otherwise.
NCCL_NET_PLUGIN = "ofi"
PLUGIN_FILE = f"libnccl-net-{NCCL_NET_PLUGIN}.so"
# The network name aws-ofi-nccl answers to. Releases up to 1.11 call themselves "AWS
# Libfabric"; later ones call themselves "Libfabric" and still take this name when NCCL_NET
# asks for it (their nvidia_plugin_name_fixup), so it suits every release.
NCCL_NET_NAME = "AWS Libfabric"
FI_PROVIDER = "efa"


@dataclass(frozen=True)
class GpuEnv:
    """What the file sets for one compute group."""

    group: str
    instance_type: str
    efa: bool
    library_path: str
    nccl_net_plugin: str
    nccl_net: str
    fi_provider: str
    efa_bin_dir: str


def gpu_env(group: ResolvedGroup) -> GpuEnv:
    return GpuEnv(
        group=group.name,
        instance_type=group.instance.name,
        efa=group.efa_count > 0,
        library_path=":".join(LIBRARY_DIRS),
        nccl_net_plugin=NCCL_NET_PLUGIN,
        nccl_net=NCCL_NET_NAME,
        fi_provider=FI_PROVIDER,
        efa_bin_dir=EFA_BIN_DIR,
    )


def render_gpu_env(resolved: ResolvedCluster, group: ResolvedGroup) -> str:
    return render(TEMPLATE, env=gpu_env(group), cluster=resolved.name)


def gpu_env_path(lib_dir: str = NODE_LAYOUT.lib_dir) -> str:
    return f"{lib_dir}/{GPU_ENV_FILE}"

"""What NVML reports for each GPU of the catalog, and Slurm's stand-in for it in the suite.

Slurm names a GPU that gpu/nvml detects by its NVML name, lower-cased with spaces as
underscores (gpu_common_underscorify_tolower in src/plugins/gpu/nvml/gpu_nvml.c, 25.11.7),
and renames it to the registered type that is a substring of that name
(_normalize_sys_gres_types, src/plugins/gres/gpu/gres_gpu.c). The names are `nvidia-smi
--query-gpu=name`'s, which is nvmlDeviceGetName's text, as public records show them.

A host without GPUs cannot run NVML. Slurm's own stand-in is fake_gpus.conf beside the
configuration slurmd uses ("<type>|<CPU count>|<CPUs>|<links>|<device file>" per GPU,
_add_fake_gpus_from_file in gres_gpu.c): slurmd reads it instead of NVML and then merges
exactly as it merges what NVML found. The CPUs field holds Slurm's abstract core ids, which
gpu/nvml computes from NVML's affinity mask (xcpuinfo_mac_to_abs in xcpuinfo.c; slurmctld
refuses a range past the node's cores: "invalid GRES core specification"), so a GPU with a
known socket gets that socket's cores and any other GPU every core.
"""

from __future__ import annotations

from gpucluster.catalog import InstanceType

NVML_NAMES: dict[str, str] = {
    # p4d.24xlarge and p4de.24xlarge: "NVIDIA A100-SXM4-40GB" / "-80GB" (nvidia-smi on
    # both); the type's substring is the same.
    "A100": "NVIDIA A100-SXM4-80GB",
    # p5: nvidia-smi topo and query output in dmonakhov/hpc-benchmarks-efa utils/aws-env.
    "H100": "NVIDIA H100 80GB HBM3",
    # p5e/p5en: this repository's tests/fixtures/slurm/slurmd-G-h200.txt (nvidia-smi and the
    # pinned slurmd -C on an H200 host: "Gres=gpu:nvidia_h200:1").
    "H200": "NVIDIA H200",
    # p6-b200: nvidia-smi in NVIDIA/TensorRT-LLM issue 10278.
    "B200": "NVIDIA B200",
    # p6-b300: torch.cuda.get_device_name() in pytorch/ao pull 3640 and
    # NVIDIA/cosmos-framework pull 114.
    "B300": "NVIDIA B300 SXM6 AC",
    "A10G": "NVIDIA A10G",
    "L4": "NVIDIA L4",
    "L40S": "NVIDIA L40S",
}


def slurm_system_type(nvml_name: str) -> str:
    """The type slurmd gives a GPU NVML detected, before matching registered types."""
    return nvml_name.lower().replace(" ", "_")


def socket_cores(instance: InstanceType, gpu: int) -> str:
    """The abstract cores NVML's affinity gives `gpu`: its socket's, or all of them."""
    if instance.gpu_sockets is None:
        return f"0-{instance.cores - 1}"
    per_socket = instance.gpu_sockets.layout.cores_per_socket
    first = instance.gpu_sockets.gpu_socket[gpu] * per_socket
    return f"{first}-{first + per_socket - 1}"


def fake_gpus_conf(instance: InstanceType, device_prefix: str, gpus: int | None = None) -> str:
    """fake_gpus.conf for a node of `instance` whose NVML finds `gpus` GPUs (all by default),
    each at `device_prefix<i>`. Links: -1 for the GPU itself, 0 (none known) for the others.
    Each has a UUID and the flag gpu/nvml gives its GPUs (ENV_NVML: jobs get
    CUDA_VISIBLE_DEVICES); without a flag the stand-in's GPUs would set no environment."""
    found = instance.gpu_count if gpus is None else gpus
    system_type = slurm_system_type(NVML_NAMES[instance.gpu_model])
    lines = []
    for gpu in range(found):
        links = ",".join("-1" if peer == gpu else "0" for peer in range(found))
        lines.append(
            f"{system_type}|{instance.vcpus}|{socket_cores(instance, gpu)}|{links}|{device_prefix}{gpu}"
            f"|GPU-00000000-0000-0000-0000-{gpu:012d}|nvidia_gpu_env"
        )
    return "\n".join(lines) + "\n"

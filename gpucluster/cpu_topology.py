"""Which CPU socket each GPU hangs off, for the instance types where a public source shows it.

Nodes of these types register the socket/core/thread layout (slurmd --conf Sockets=,
CoresPerSocket=, ThreadsPerCore=), so slurmctld refuses a node whose hardware is not that
type's. The GPU-to-core binding itself comes from NVML on every type (gres.conf:
AutoDetect=nvml); each GPU's socket here is what NVML's affinity shows on that type, which
the real-Slurm suite's NVML stand-in reports (tests/fake_nvml.py). DescribeInstanceTypes
gives neither socket count nor GPU placement, hence this table.

An entry is made only from a concrete public record of that instance type (`nvidia-smi topo
-m`, NCCL's affinity log, AWS's own NCCL topology files); GPU i is the i-th GPU in PCI bus order,
which is nvidia-smi's index and the /dev/nvidia<i> minor number. Types without an entry
(p5.4xlarge, p5en, p6-b200, p6-b300, the g families) register no layout: slurmd reports what
it detects.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, model_validator


class CpuLayout(BaseModel):
    """What slurmd reports as Sockets, CoresPerSocket and ThreadsPerCore."""

    model_config = ConfigDict(frozen=True)

    sockets: int
    cores_per_socket: int
    threads_per_core: int

    @property
    def cores(self) -> int:
        return self.sockets * self.cores_per_socket


class GpuSockets(BaseModel):
    """A CPU layout and the socket of each GPU, GPU 0 first."""

    model_config = ConfigDict(frozen=True)

    layout: CpuLayout
    gpu_socket: tuple[int, ...]

    @model_validator(mode="after")
    def _sockets_exist(self) -> GpuSockets:
        for gpu, socket in enumerate(self.gpu_socket):
            if not 0 <= socket < self.layout.sockets:
                raise ValueError(f"GPU {gpu} is on socket {socket}, but the layout has {self.layout.sockets}")
        return self


_TWO_BY_24 = CpuLayout(sockets=2, cores_per_socket=24, threads_per_core=2)
_TWO_BY_48 = CpuLayout(sockets=2, cores_per_socket=48, threads_per_core=2)
_FOUR_PER_SOCKET = (0, 0, 0, 0, 1, 1, 1, 1)

VERIFIED: dict[str, GpuSockets] = {
    # aws/aws-ofi-nccl topology/p4d-24xl-topo.xml ("2 groups of PCIe hierarchy under each
    # socket"): GPUs 0-3 under <cpu numaid="0" affinity="000000ff,ffff0000,00ffffff"> (CPUs
    # 0-23,48-71), GPUs 4-7 under numaid 1 (24-47,72-95): 2 sockets x 24 cores x 2 threads. NCCL
    # on p4d logs the same masks ("Setting affinity for GPU 3 to ff,ffff0000,00ffffff", GPU 4-7
    # "ffffff00,0000ffff,ff000000"; aws/aws-ofi-nccl issue 64, NVIDIA/nccl issue 527).
    "p4d.24xlarge": GpuSockets(layout=_TWO_BY_24, gpu_socket=_FOUR_PER_SOCKET),
    # aws/aws-ofi-nccl topology/p4de-24xl-topo.xml: the same two numaid groups and masks.
    "p4de.24xlarge": GpuSockets(layout=_TWO_BY_24, gpu_socket=_FOUR_PER_SOCKET),
    # `nvidia-smi topo -m` in dmonakhov/hpc-benchmarks-efa utils/aws-env/p5.48xlarge: GPUs 0-3
    # CPU Affinity 0-47,96-143 (NUMA 0), GPUs 4-7 48-95,144-191 (NUMA 1); aws/aws-ofi-nccl
    # topology/p5.48xl-topo.xml (commit 8807ce1, "4 groups of PCIe hierarchy under each
    # socket", two numaid groups). 2 sockets x 48 cores x 2 threads.
    "p5.48xlarge": GpuSockets(layout=_TWO_BY_48, gpu_socket=_FOUR_PER_SOCKET),
    # `nvidia-smi topo -m` in dmonakhov/hpc-benchmarks-efa utils/aws-env/p5e.48xlarge: four NUMA
    # nodes of 24 cores; GPUs 0-1 on 24-47,120-143, GPUs 2-3 on 0-23,96-119, GPUs 4-5 on
    # 72-95,168-191, GPUs 6-7 on 48-71,144-167. So GPUs 0-3 use CPUs 0-47 (+ their SMT siblings)
    # and GPUs 4-7 CPUs 48-95: the two 48-core sockets, as on p5.48xlarge.
    "p5e.48xlarge": GpuSockets(layout=_TWO_BY_48, gpu_socket=_FOUR_PER_SOCKET),
}

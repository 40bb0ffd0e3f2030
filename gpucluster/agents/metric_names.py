"""Every CloudWatch metric gpucluster publishes: its name, unit and dimensions, written once.

The node collector (node_metrics) and the head's Slurm collector (slurm_metrics) emit
exactly these; the dashboard, the alarms and `gpucluster top` read them from here, and a
test checks that everything they read is something a collector publishes. Like
cluster_names, this module ships in the bootstrap bundle's agents tree and imports only the
standard library.

Dimensions are chosen for cost: CloudWatch bills each distinct name + dimension values
as one custom metric, so nothing carries a dimension that could grow without bound
except the per-job metrics, which exist only while their job runs (CloudWatch prorates
custom metrics by the hour).
"""

from __future__ import annotations

from dataclasses import dataclass

# Every metric of a cluster is under one namespace.
NAMESPACE_FORMAT = "gpucluster/{cluster}"

# Dimension names.
NODE = "Node"  # the Slurm node name (also the compute node's host name)
GPU = "Gpu"  # the GPU's index on its node, as nvidia-smi and Slurm's GRES IDX count it
DEVICE = "Device"  # the EFA device's name under /sys/class/infiniband
STATE = "State"  # a Slurm node state, one of NODE_STATES
JOB = "JobId"  # a running Slurm job's id
GROUP = "Group"  # a compute group's name

# How often the collectors run, seconds (their timers' OnCalendar and the EMF resolution).
PERIOD_SECONDS = 60


def namespace(cluster: str) -> str:
    return NAMESPACE_FORMAT.format(cluster=cluster)


@dataclass(frozen=True)
class Metric:
    name: str
    # A CloudWatch StandardUnit.
    unit: str
    dimensions: tuple[str, ...]


# Per GPU, from nvidia-smi and the kernel log (node_metrics).
GPU_UTILIZATION = Metric("GpuUtilization", "Percent", (NODE, GPU))
GPU_MEMORY_USED = Metric("GpuMemoryUsed", "Megabytes", (NODE, GPU))
GPU_POWER = Metric("GpuPowerWatts", "None", (NODE, GPU))
GPU_TEMPERATURE = Metric("GpuTemperatureCelsius", "None", (NODE, GPU))
# Xid lines the NVIDIA driver logged for this GPU since the collector's previous run.
GPU_XID_ERRORS = Metric("GpuXidErrors", "Count", (NODE, GPU))
# Uncorrectable ECC errors since the driver loaded (nvidia-smi's volatile total).
GPU_ECC_ERRORS = Metric("GpuEccUncorrectedErrors", "Count", (NODE, GPU))
GPU_METRICS = (
    GPU_UTILIZATION,
    GPU_MEMORY_USED,
    GPU_POWER,
    GPU_TEMPERATURE,
    GPU_XID_ERRORS,
    GPU_ECC_ERRORS,
)

# Per EFA device, rates over the collector's interval from the driver's hw_counters.
EFA_TX_BYTES = Metric("EfaTxBytes", "Bytes/Second", (NODE, DEVICE))
EFA_RX_BYTES = Metric("EfaRxBytes", "Bytes/Second", (NODE, DEVICE))
EFA_RDMA_READ_BYTES = Metric("EfaRdmaReadBytes", "Bytes/Second", (NODE, DEVICE))
EFA_RDMA_WRITE_BYTES = Metric("EfaRdmaWriteBytes", "Bytes/Second", (NODE, DEVICE))
# Counts over the interval.
EFA_RETRANSMITS = Metric("EfaRetransmitPackets", "Count", (NODE, DEVICE))
EFA_ERRORS = Metric("EfaErrors", "Count", (NODE, DEVICE))
EFA_METRICS = (
    EFA_TX_BYTES,
    EFA_RX_BYTES,
    EFA_RDMA_READ_BYTES,
    EFA_RDMA_WRITE_BYTES,
    EFA_RETRANSMITS,
    EFA_ERRORS,
)

# From the head node (slurm_metrics): the whole cluster as Slurm sees it.
NODE_STATES = ("idle", "allocated", "mixed", "drained", "down")
SLURM_NODES = Metric("SlurmNodes", "Count", (STATE,))
SLURM_JOBS_RUNNING = Metric("SlurmJobsRunning", "Count", ())
SLURM_JOBS_PENDING = Metric("SlurmJobsPending", "Count", ())
SLURM_GPUS_TOTAL = Metric("SlurmGpusTotal", "Count", ())
SLURM_GPUS_ALLOCATED = Metric("SlurmGpusAllocated", "Count", ())
# Allocated GPUs whose utilization was below IDLE_GPU_PERCENT over the last period.
SLURM_GPUS_IDLE_ALLOCATED = Metric("SlurmGpusAllocatedIdle", "Count", ())
# Per running job: its GPUs' mean utilization and how many of them sat idle.
JOB_GPU_UTILIZATION = Metric("JobGpuUtilization", "Percent", (JOB,))
JOB_IDLE_GPUS = Metric("JobIdleGpus", "Count", (JOB,))
SLURM_METRICS = (
    SLURM_NODES,
    SLURM_JOBS_RUNNING,
    SLURM_JOBS_PENDING,
    SLURM_GPUS_TOTAL,
    SLURM_GPUS_ALLOCATED,
    SLURM_GPUS_IDLE_ALLOCATED,
)
JOB_METRICS = (JOB_GPU_UTILIZATION, JOB_IDLE_GPUS)
# From the head's capacity controller: minutes until an active Capacity Block ends.
CAPACITY_BLOCK_MINUTES_LEFT = Metric("CapacityBlockMinutesLeft", "None", (GROUP,))
BLOCK_METRICS = (CAPACITY_BLOCK_MINUTES_LEFT,)
# A GPU below this utilization (percent, mean over a period) counts as idle.
IDLE_GPU_PERCENT = 5.0

ALL_METRICS = (*GPU_METRICS, *EFA_METRICS, *SLURM_METRICS, *JOB_METRICS, *BLOCK_METRICS)


def insights(
    namespace: str,
    metric: Metric,
    stat: str,
    group_by: str | None = None,
    order: str = "DESC",
    limit: int = 0,
) -> str:
    """A CloudWatch Metrics Insights query over every series of `metric` (SCHEMA of exactly its
    dimensions), one series per `group_by` value or one for all: what the dashboard, the
    alarms and `gpucluster top` read per-node and per-job metrics with."""
    keys = ", ".join([f'"{namespace}"', *metric.dimensions])
    query = f"SELECT {stat}({metric.name}) FROM SCHEMA({keys})"
    if group_by:
        query += f" GROUP BY {group_by} ORDER BY {stat}() {order}"
    if limit:
        query += f" LIMIT {limit}"
    return query

"""The go/no-go validation jobs, rendered per compute group from the config and the catalog,
and the cluster's import-image job (the training image, once, into a squashfs on shared storage).

Login nodes install them under NodeLayout.jobs_dir/<group>/ (bundle tree files/login/...); `gpucluster
render` writes them with the rest of the bundle. Each job is a self-contained sbatch script:
sbatch copies only the script to the first compute node, so nothing is sourced from the login
node. The lines the gate reads back (pair header, efa-check) come from
gpucluster.job_output and are rendered here, never retyped in the templates.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster import dcgm
from gpucluster.agents import health_reasons
from gpucluster.bootstrap import ecr_login
from gpucluster.config.ecr import ECR_HOST
from gpucluster.container.dockerfile import NCCL_TESTS_BUILD_DIR
from gpucluster.job_output import EFA_CHECK_PRINTF, EFA_FAIL, EFA_OK, NO_PARTNERS, NO_SWITCH, PAIR_PRINTF
from gpucluster.launch.gpu_env import gpu_env_path
from gpucluster.names import SQUASHFS_SUFFIX, squashfs_name
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.resolved.node_layout import NODE_LAYOUT

TEMPLATE_DIR = "jobs"
JOB_NAMES = ("efa-check", "nccl-tests", "nccl-pairwise", "dcgm-diag")
IMPORT_JOB = "import-image"

# The sweep the published peaks were measured with (aws-samples/awsome-distributed-training,
# micro-benchmarks/nccl-tests): up to 16 GiB, one GPU per process.
NCCL_COLLECTIVES = ("all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf")
NCCL_SIZE_ARGS = ("-b", "8", "-e", "16G", "-f", "2", "-g", "1")
# The DLAMI ships nccl-tests built against its Open MPI under each CUDA: NCCL Tests Location
# /usr/local/cuda-xx.x/efa/test-cuda-xx.x/ (DLAMI release notes). The job follows the
# /usr/local/cuda link to the image's default CUDA.
DLAMI_CUDA_LINK = "/usr/local/cuda"
# Where container images keep the nccl-tests binaries: the training image's recipe builds them
# there, as aws-samples awsome-distributed-training's nccl-tests Dockerfile does.
CONTAINER_NCCL_TESTS_DIR = NCCL_TESTS_BUILD_DIR
DCGM_DIAG_LEVEL = 2

# Time limits (minutes): every job sets --time, since a job without one gets the partition's
# DefaultTime, and a Capacity Block's end reservation blocks jobs whose limit reaches into it.
# nccl-tests runs its collectives one after the other and pairwise its two rounds, each bounded
# by NCCL_RUN_TIMEOUT: their limits hold every run at its bound (tests/jobs/test_validation_jobs.py).
TIME_LIMITS = {"efa-check": 15, "nccl-tests": 100, "nccl-pairwise": 60, "dcgm-diag": 30, IMPORT_JOB: 60}
# Bounded waits inside the jobs (seconds): a hung tool is a named failure, not a stuck job.
WAITS = {
    "PROBE_TIMEOUT": 30,
    "PINGPONG_TIMEOUT": 30,
    # Not a wait: how many efa-check pairs run at once (two job steps each).
    "PINGPONG_PARALLEL": 64,
    "NCCL_RUN_TIMEOUT": 1200,
    # The first container start imports the image (several GB) into Enroot.
    "IMAGE_TIMEOUT": 600,
    # Pulling and squashing a 20 GB NGC-based image once.
    "IMPORT_TIMEOUT": 3000,
    # The torchrun job's Python environment, built once per user: venv, then pip's download of
    # torch and its CUDA libraries (several GB); also how long a second job waits for the first.
    "ENV_BUILD_TIMEOUT": 1800,
    "KILL_GRACE": 10,
}
# The dcgm-diag job's own line (the gate does not read it): one per node.
# Each DCGM level's run is bounded (gpucluster.dcgm); the job also needs a minute for srun's
# start and its own bound's kill grace, then rounds up to whole minutes.
DCGM_JOB_OVERHEAD_SECONDS = 60 + 60 + WAITS["KILL_GRACE"]
DCGM_PRINTF = "gpucluster-dcgm-diag node=%s result=%s reason=%s\\n"


@dataclass(frozen=True)
class GroupJobs:
    """What the templates know about one compute group."""

    cluster: str
    group: str
    partition: str
    instance_type: str
    gpus: int
    efa: int
    cpus_per_task: int


def group_jobs(resolved: ResolvedCluster, group: ResolvedGroup) -> GroupJobs:
    instance = group.instance
    return GroupJobs(
        cluster=resolved.name,
        group=group.name,
        partition=group.partition,
        instance_type=instance.name,
        gpus=instance.gpu_count,
        efa=group.efa_count,
        # Every vCPU the node has, shared out to its GPU ranks (NCCL's proxy threads need some).
        cpus_per_task=max(1, instance.vcpus // instance.gpu_count),
    )


def _printf_format(name: str, value: str) -> str:
    # Rendered inside single quotes as printf's format.
    if "'" in value:
        raise ValueError(f"{name} holds a single quote and cannot be rendered into shell")
    return value


def render_job(
    resolved: ResolvedCluster, group: ResolvedGroup, job: str, lib_dir: str = NODE_LAYOUT.lib_dir
) -> str:
    """`lib_dir`: where the nodes keep gpucluster.launch.node_lib's files (the suite's own)."""
    if job not in JOB_NAMES:
        raise ValueError(f"unknown validation job {job!r}; jobs are {', '.join(JOB_NAMES)}")
    settings = resolved.validation
    return render(
        f"{TEMPLATE_DIR}/{job}.sbatch.j2",
        job=job,
        g=group_jobs(resolved, group),
        # Within the partition's MaxTime, or the job pends forever on PartitionTimeLimit.
        time_limit=min(TIME_LIMITS[job], group.max_time_minutes),
        waits=WAITS,
        pair_printf=_printf_format("PAIR_PRINTF", PAIR_PRINTF),
        efa_check_printf=_printf_format("EFA_CHECK_PRINTF", EFA_CHECK_PRINTF),
        dcgm_printf=_printf_format("DCGM_PRINTF", DCGM_PRINTF),
        efa_ok=EFA_OK,
        efa_fail=EFA_FAIL,
        no_partners=NO_PARTNERS,
        no_switch=NO_SWITCH,
        collectives=NCCL_COLLECTIVES,
        size_args=" ".join(NCCL_SIZE_ARGS),
        nccl_tests_dir=settings.nccl_tests_dir or "",
        # An explicit image wins; else the training image's squashfs; else the host's binaries.
        container_image=settings.container_image or resolved.names.training_squashfs,
        import_job=import_job_path(),
        jobs_dir=NODE_LAYOUT.jobs_dir,
        mpi_home=settings.mpi_home,
        dlami_cuda_link=DLAMI_CUDA_LINK,
        container_nccl_tests_dir=CONTAINER_NCCL_TESTS_DIR,
        dcgm_level=DCGM_DIAG_LEVEL,
        dcgm_bounds=dcgm.bounds_by_level(),
        dcgm_minutes=dcgm_job_minutes(),
        dcgm_reason_prefix=health_reasons.DCGM,
        dcgm_failed_tests_jq=dcgm.FAILED_TESTS_JQ,
        lib_dir=lib_dir,
        gpu_env=gpu_env_path(lib_dir),
    )


def dcgm_job_minutes() -> dict[int, int]:
    """The --time a dcgm-diag job needs for each level."""
    return {
        level: -(-(seconds + DCGM_JOB_OVERHEAD_SECONDS) // 60)
        for level, seconds in dcgm.bounds_by_level().items()
    }


def job_path(group: str, job: str) -> str:
    return f"{NODE_LAYOUT.jobs_dir}/{group}/{job}.sbatch"


def import_job_path() -> str:
    return f"{NODE_LAYOUT.jobs_dir}/{IMPORT_JOB}.sbatch"


def render_import_image(resolved: ResolvedCluster) -> str:
    image = resolved.software.training_image or ""
    return render(
        f"{TEMPLATE_DIR}/{IMPORT_JOB}.sbatch.j2",
        job=IMPORT_JOB,
        cluster=resolved.name,
        path=import_job_path(),
        # Any compute node will do (sbatch -p overrides): the first group's partition.
        partition=resolved.groups[0].partition,
        time_limit=TIME_LIMITS[IMPORT_JOB],
        waits=WAITS,
        image=image,
        squashfs=squashfs_name(image) if image else "",
        suffix=SQUASHFS_SUFFIX,
        image_dir=resolved.names.image_dir,
        ecr_host=ECR_HOST.pattern,
        ecr_password=ecr_login.HELPER,
        ecr_login=ecr_login.login_command("REGION"),
    )


def job_files(resolved: ResolvedCluster, lib_dir: str = NODE_LAYOUT.lib_dir) -> dict[str, str]:
    """Every validation job of every compute group and the cluster's import-image job, keyed
    by where a login node installs them."""
    files = {
        job_path(group.name, job): render_job(resolved, group, job, lib_dir)
        for group in resolved.groups
        for job in JOB_NAMES
    }
    files[import_job_path()] = render_import_image(resolved)
    return files

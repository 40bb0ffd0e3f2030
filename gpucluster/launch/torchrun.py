"""The torchrun training job, rendered per compute group beside the validation jobs.

It reuses their machinery (gpucluster.jobs.validation: the group's facts, the sbatch head,
the shell helpers): login nodes install it as NodeLayout.jobs_dir/<group>/torchrun.sbatch and
`gpucluster render` writes it with the rest of the bundle. One torchrun launcher per node
starts one process per GPU (FACTS.md, torchrun under Slurm); the default command is the
reference trainer, `python -m gpucluster.train`.
"""

from __future__ import annotations

from gpucluster.container.dockerfile import CODE_DIR
from gpucluster.jobs.validation import TEMPLATE_DIR, WAITS, group_jobs, import_job_path, job_path
from gpucluster.launch.gpu_env import PLUGIN_FILE, gpu_env_path
from gpucluster.launch.node_lib import python_requirements, trainer_dir
from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster, ResolvedGroup
from gpucluster.resolved.node_layout import NODE_LAYOUT

JOB = "torchrun"
# torchrun's own default rendezvous port.
RENDEZVOUS_PORT = 29500
# Slurm sends USR1 to the batch shell this long before the time limit; the trainer then
# saves a checkpoint and exits, and the job requeues itself. Long enough to write a large
# model's state to FSx; Slurm may send it up to 60 s earlier than asked (man sbatch, --signal).
SIGNAL_SECONDS = 600
# The reference trainer's default length when TRAIN_STEPS is not set.
DEFAULT_STEPS = 1000
# The interpreter the host environment is built with: the image's own (Ubuntu's python3 on the
# Deep Learning AMI, the same on every node).
DEFAULT_PYTHON = "/usr/bin/python3"


def render_torchrun(
    resolved: ResolvedCluster, group: ResolvedGroup, lib_dir: str = NODE_LAYOUT.lib_dir
) -> str:
    """`lib_dir`: where the nodes keep gpucluster.launch.node_lib's files (the suite's own)."""
    fsx = resolved.fsx_lustre
    instance = group.instance
    return render(
        f"{TEMPLATE_DIR}/{JOB}.sbatch.j2",
        job=JOB,
        g=group_jobs(resolved, group),
        tasks_per_node="launcher",
        launcher_cpus=instance.vcpus,
        # The job runs as long as the partition's DefaultTime unless sbatch --time says otherwise.
        time_limit=group.default_time_minutes,
        waits=WAITS,
        signal_seconds=SIGNAL_SECONDS,
        rendezvous_port=RENDEZVOUS_PORT,
        storage_root=fsx.mount_point if fsx is not None else "",
        default_steps=DEFAULT_STEPS,
        # The squashfs the import job writes for software.training_image (empty: on the host).
        container_image=resolved.names.training_squashfs,
        import_job=import_job_path(),
        jobs_dir=NODE_LAYOUT.jobs_dir,
        lib_dir=lib_dir,
        gpu_env=gpu_env_path(lib_dir),
        trainer_dir=trainer_dir(lib_dir),
        code_dir=CODE_DIR,
        torch_version=resolved.software.torch_version,
        requirements=python_requirements(resolved),
        default_python=DEFAULT_PYTHON,
        plugin_file=PLUGIN_FILE,
    )


def torchrun_files(resolved: ResolvedCluster, lib_dir: str = NODE_LAYOUT.lib_dir) -> dict[str, str]:
    """The torchrun job of every compute group, keyed by where a login node installs it."""
    return {job_path(group.name, JOB): render_torchrun(resolved, group, lib_dir) for group in resolved.groups}

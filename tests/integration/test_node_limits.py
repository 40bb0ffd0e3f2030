"""What a job takes from its node rather than from the shell that submitted it, on real Slurm:
locked memory (EFA registers buffers with the adapter), in a batch step and in srun steps,
on the host and in a container. slurmd runs with memlock unlimited, as production's unit
gives it (LimitMEMLOCK=infinity), or with the most this host lets the suite give it
(cluster.slurmd_memlock); the submitting shell's limit is 64 KiB, as a Session Manager
shell's can be. And the controller starts without complaining about MailProg."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.cluster import SlurmCluster, slurmd_memlock
from tests.integration.containers import busybox_image
from tests.integration.host import run

pytestmark = pytest.mark.slurm

LOW_MEMLOCK = 65536  # bytes
STEP_TIMEOUT = 120


def _slurmds() -> list[str]:
    """/proc/self/limits' memlock of a process with slurmd's limit, soft and hard."""
    return [slurmd_memlock()] * 2


# The same check everywhere: a busybox container has grep and /proc, as the host does.
MEMLOCK = "grep 'Max locked memory' /proc/self/limits"


def _memlock(line: str) -> list[str]:
    """['soft', 'hard'] of a 'Max locked memory  SOFT  HARD  bytes' line."""
    return line.split()[3:5]


def _from_low_shell(
    cluster: SlurmCluster, *argv: str, timeout: float = STEP_TIMEOUT
) -> subprocess.CompletedProcess:
    """A Slurm command run from a shell whose memlock limit is 64 KiB, soft and hard."""
    low = ["prlimit", f"--memlock={LOW_MEMLOCK}:{LOW_MEMLOCK}"]
    return run(*low, *cluster.install.command(list(argv)), env=cluster.env, timeout=timeout)


def test_the_low_limit_is_really_the_submitting_shells(slurm_cluster: SlurmCluster):
    """The shell the steps below come from has 64 KiB, less than slurmd's: what they get is
    not its limit."""
    shell = _from_low_shell(slurm_cluster, "sh", "-c", MEMLOCK)
    assert _memlock(shell.stdout) == [str(LOW_MEMLOCK)] * 2, shell.stdout
    assert slurmd_memlock() == "unlimited" or int(slurmd_memlock()) > LOW_MEMLOCK


def test_steps_keep_slurmds_memlock_on_the_host_and_in_a_container(cluster: SlurmCluster):
    image = busybox_image()
    jobs = cluster.root / "jobs"
    host = _from_low_shell(cluster, "srun", f"--chdir={jobs}", "--nodes=1", "sh", "-c", MEMLOCK)
    assert _memlock(host.stdout) == _slurmds(), host.stdout + host.stderr
    contained = _from_low_shell(
        cluster, "srun", f"--chdir={jobs}", "--nodes=1", f"--container-image={image}", "sh", "-c", MEMLOCK
    )
    assert _memlock(contained.stdout) == _slurmds(), contained.stdout + contained.stderr

    output = jobs / f"memlock-{os.getpid()}.out"
    script = jobs / f"memlock-{os.getpid()}.sh"
    script.write_text(
        "#!/bin/bash\n"
        f"echo batch $({MEMLOCK})\n"
        f'srun sh -c "echo host \\$({MEMLOCK})"\n'
        f'srun --container-image={image} sh -c "echo container \\$({MEMLOCK})"\n'
    )
    submitted = _from_low_shell(
        cluster, "sbatch", "--parsable", "--nodes=1", f"--chdir={jobs}", f"--output={output}", str(script)
    )
    job = submitted.stdout.strip().split(";")[0]
    info = cluster.wait_job_state(job, {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"}, STEP_TIMEOUT)
    text = output.read_text() if output.exists() else "(no output)"
    assert info["JobState"] == "COMPLETED", text
    limits = {line.split()[0]: _memlock(line.split(maxsplit=1)[1]) for line in text.splitlines() if line}
    assert limits == dict.fromkeys(("batch", "host", "container"), _slurmds()), text


def test_the_controller_starts_without_a_mail_program_complaint(slurm_cluster: SlurmCluster):
    log = Path(slurm_cluster.site.slurmctld_log_file).read_text()
    assert "slurmctld version" in log, "the log holds the controller's start"
    assert "Configured MailProg is invalid" not in log
    config = slurm_cluster.slurm("scontrol", "show", "config").stdout
    (mail,) = [line.split("=", 1)[1].strip() for line in config.splitlines() if line.startswith("MailProg")]
    assert mail == "/usr/bin/logger"

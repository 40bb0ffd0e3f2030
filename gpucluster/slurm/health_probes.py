"""How long each probe of the node health check may run.

slurmd kills its HealthCheckProgram once it has run 60 s (slurm.conf(5),
HealthCheckProgram). A probe that hangs on a sick node (nvidia-smi on a GPU that
fell off the bus, fi_info on a wedged EFA device, a stat of a dead EFS or Lustre
mount) would take the whole check down with it: no drain, no reason, the node
keeps taking jobs. So every probe runs under `timeout -k KILL_GRACE <s>` and a
timeout is a failure that names the probe; the probes run one after another, so
their timeouts plus each one's kill grace must stay well under slurmd's limit.
"""

from __future__ import annotations

from dataclasses import dataclass

# slurmd's own limit on HealthCheckProgram: "killed if it does not terminate normally within
# 60 seconds" (slurm.conf(5), HealthCheckProgram, as shipped with slurm-wlm 22.05.8).
SLURMD_HEALTHCHECK_LIMIT_SECONDS = 60
# Left between the worst case and slurmd's limit: bash start-up, awk/grep between probes.
MARGIN_SECONDS = 10
# `timeout -k`: seconds between TERM and KILL. Since Linux 2.6.25 KILL also ends a task
# blocked on a hard NFS mount (TASK_KILLABLE), so an EFS stat ends too.
KILL_GRACE_SECONDS = 1
# slurm.conf PrologEpilogTimeout: Slurm kills a Prolog (and Pyxis's job epilog, which removes a
# job's named containers) that runs longer, drains the node with its own reason and requeues
# the job; without it Slurm waits for ever (slurm.conf(5), 25.11). The Prolog's probes stay
# well under it so a hung probe drains the node with the probe's name instead.
PROLOG_EPILOG_TIMEOUT_SECONDS = 120
# The Prolog's worst case may use at most this share of PrologEpilogTimeout.
PROLOG_SHARE = 0.5
# The systemd unit of NVIDIA Fabric Manager (package nvidia-fabricmanager-<driver branch>).
FABRIC_MANAGER_UNIT = "nvidia-fabricmanager"
# The systemd unit of DCGM's nv-hostengine (package datacenter-gpu-manager-4, which the DLAMI
# ships): `dcgmi diag` asks it to run the diagnostic.
DCGM_UNIT = "nvidia-dcgm"


@dataclass(frozen=True)
class ProbeTimeouts:
    """Seconds each probe may run before the check calls it hung."""

    # nvidia-smi initialises every GPU when no persistence daemon holds them: seconds on 8 GPUs.
    nvidia_smi: int = 12
    fi_info: int = 8
    fabric_manager: int = 3
    # Per required mount (/home and, when configured, the FSx mount point).
    mount: int = 4
    munge: int = 4
    scontrol: int = 6
    # The Prolog's refresh of the node names (scontrol show nodes, then a local file).
    node_hosts: int = 8

    def __post_init__(self) -> None:
        for name, seconds in vars(self).items():
            if seconds < 1:
                raise ValueError(f"ProbeTimeouts.{name} must be at least 1 s, not {seconds}")

    def worst_case_seconds(self, mounts: int) -> int:
        """Run time when every probe hangs until killed (munge | unmunge run together)."""
        per_probe = [
            self.nvidia_smi,
            self.fi_info,
            self.fabric_manager,
            *([self.mount] * mounts),
            self.munge,
            self.scontrol,
        ]
        return sum(seconds + KILL_GRACE_SECONDS for seconds in per_probe)

    def prolog_worst_case_seconds(self) -> int:
        """Run time of the Prolog (GPU, EFA and Fabric Manager probes, then its drain or the
        node names' refresh) when every probe hangs until killed."""
        per_probe = [self.nvidia_smi, self.fi_info, self.fabric_manager, self.scontrol, self.node_hosts]
        return sum(seconds + KILL_GRACE_SECONDS for seconds in per_probe)

    def check_prolog_budget(self) -> None:
        """Refuse timeouts whose worst case would let Slurm kill the Prolog before it drains."""
        budget = int(PROLOG_EPILOG_TIMEOUT_SECONDS * PROLOG_SHARE)
        worst = self.prolog_worst_case_seconds()
        if worst > budget:
            raise ValueError(
                f"the Prolog's probes may run {worst} s, more than the {budget} s allowed under "
                f"PrologEpilogTimeout={PROLOG_EPILOG_TIMEOUT_SECONDS}"
            )

    def check_budget(self, mounts: int) -> None:
        """Refuse timeouts whose worst case would let slurmd kill the check half-way."""
        budget = SLURMD_HEALTHCHECK_LIMIT_SECONDS - MARGIN_SECONDS
        worst = self.worst_case_seconds(mounts)
        if worst > budget:
            raise ValueError(
                f"health check probes may run {worst} s with {mounts} mounts, more than the {budget} s "
                f"left under slurmd's {SLURMD_HEALTHCHECK_LIMIT_SECONDS} s HealthCheckProgram limit"
            )

"""A login node's Slurm commands, with no slurm.conf of their own, reach the controller
the way the login bootstrap sets them up: sackd fetches the served configuration into
/run/slurm/conf."""

from __future__ import annotations

import pytest

from tests.integration.cluster import SlurmCluster
from tests.integration.login import LoginNode

pytestmark = pytest.mark.slurm


def test_login_commands_find_the_controller_without_a_configuration_file(
    cluster: SlurmCluster, slurm_login: LoginNode
):
    assert not slurm_login.path("/etc/slurm/slurm.conf").exists()
    assert "is UP" in slurm_login.run("scontrol", "ping").stdout
    served = slurm_login.path("/run/slurm/conf/slurm.conf").read_text()
    assert served == (cluster.root / "etc" / "slurm.conf").read_text()
    assert slurm_login.path("/run/slurm/conf/plugstack.conf").exists()


def test_a_step_started_on_the_login_runs_on_the_compute_nodes(cluster: SlurmCluster, slurm_login: LoginNode):
    """srun on the login: slurmctld allocates, and each node's slurmstepd connects back to
    srun at the login's own address (another network namespace than the controller's)."""
    step = slurm_login.run(
        "srun",
        f"--chdir={cluster.root / 'jobs'}",
        "--nodes=2",
        "--ntasks-per-node=1",
        "--cpus-per-task=1",
        "bash",
        "-c",
        'echo "$SLURMD_NODENAME"',
    )
    assert sorted(step.stdout.split()) == sorted(cluster.nodes)

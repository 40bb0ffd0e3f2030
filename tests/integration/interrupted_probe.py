"""A real-Slurm run to be interrupted, started as a suite of its own by
test_interrupted_run.py (pytest collects it only when named: it is no test_*.py).

It brings up everything a run starts (the cluster with accounting, a login with sackd,
dnsmasq), has a job running on both nodes, says so in PROBE_READY (the run's root), and
then waits to be SIGKILLed, as a time limit kills pytest: no teardown runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.integration.cluster import SlurmCluster
from tests.integration.login import LoginNode

pytestmark = pytest.mark.slurm

READY = "PROBE_READY"


def test_a_run_with_a_job_running_waits_to_be_killed(cluster: SlurmCluster, slurm_login: LoginNode):
    ready = os.environ.get(READY)
    assert ready, f"{READY} is unset: test_interrupted_run.py runs this file and kills it"
    cluster.dns()
    job = cluster.submit("--nodes=2", "--ntasks-per-node=1", "--output=/dev/null", script="srun sleep 900\n")
    cluster.wait_job_state(job, {"RUNNING"}, timeout=60)
    Path(ready).write_text(str(cluster.root))
    time.sleep(900)

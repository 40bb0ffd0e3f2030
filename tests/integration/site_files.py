"""What the suite writes before slurmctld starts: the `SlurmSite` of a cluster under one
test directory, the configuration gpucluster renders for it, the node health check, the
stand-in tools it calls, and bind mounts for the shared file systems it expects."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

from gpucluster.agent_package import agent_tree, write_tree
from gpucluster.bootstrap import node_hosts
from gpucluster.bootstrap.bundle import NODE_AGENTS
from gpucluster.bootstrap.container_runtime import NVME_MOUNT
from gpucluster.catalog import InstanceType
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.efa import efa_count
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.accounting import AccountingSettings, AccountingSite
from gpucluster.slurm.conf import SlurmSite
from gpucluster.slurm.health_probes import FABRIC_MANAGER_UNIT
from gpucluster.slurm.rest_api import RestApiSite
from tests.fake_nvml import fake_gpus_conf
from tests.integration.accounting_daemons import RESTD_GROUP, RESTD_USER, SLURMDBD_PORT
from tests.integration.daemons import munge_socket
from tests.integration.host import Teardown, run
from tests.integration.network import CONTROLLER_IP
from tests.integration.prerequisites import ProcessTracking
from tests.slurm.conf_text import healthcheck_of

NODE_LOCAL_PATHS = (NVME_MOUNT, "/run")
SLURMCTLD_PORT = 16817
SLURMD_PORT = 16818

FAKE_NVIDIA_SMI = """#!/bin/bash
# Test stand-in: 8 GPUs, or the count written in {override_dir}/<node name>. Under a job's
# Prolog (SLURM_SCRIPT_CONTEXT=prolog_slurmd) it records the job, then answers with the count
# in {override_dir}/<node name>.prolog, or never when that file says "hang".
count=8
if [[ -n "${{SLURMD_NODENAME:-}}" && -f "{override_dir}/${{SLURMD_NODENAME}}" ]]; then
  count=$(cat "{override_dir}/${{SLURMD_NODENAME}}")
fi
if [[ "${{SLURM_SCRIPT_CONTEXT:-}}" == prolog_slurmd ]]; then
  echo "${{SLURM_JOB_ID}} ${{SLURMD_NODENAME}}" >>"{override_dir}/prolog-calls"
  if [[ -f "{override_dir}/${{SLURMD_NODENAME}}.prolog" ]]; then
    count=$(cat "{override_dir}/${{SLURMD_NODENAME}}.prolog")
    [[ "$count" != hang ]] || exec sleep 60
  fi
fi
for ((i = 0; i < count; i++)); do
  echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000$i)"
done
"""

FAKE_FI_INFO = """#!/bin/bash
# Test stand-in: {count} EFA devices, each listed under the efa and efa-direct fabrics.
for ((i = 0; i < {count}; i++)); do
  for fabric in efa efa-direct; do
    printf 'provider: efa\\n    fabric: %s\\n    domain: rdmap%ss0-rdm\\n' "$fabric" "$i"
  done
done
"""

# Test stand-in for the health check's one systemctl question on NVSwitch types: the test
# host runs no Fabric Manager, and the host's own systemd must not decide the test.
FAKE_SYSTEMCTL = """#!/bin/bash
[[ "$*" == "is-active --quiet {unit}" ]]
"""


def node_prefix(root: Path) -> Path:
    """Stands in for a node's `/` where the suite installs what a node's bootstrap installs
    there (Pyxis, Enroot and its NVMe directories): the production path under this prefix."""
    return root / "node"


def node_local_binds(root: Path, node: str) -> list[tuple[Path, Path]]:
    """(source, target) bind mounts that give one test node its own local disk at the paths
    every node shares: NVMe (Enroot's data) and /run (Pyxis's runtime_path, which Pyxis
    makes without parents). The test nodes share one file system; EC2 nodes do not."""
    local = root / "nodes" / node
    return [(local / path.lstrip("/"), Path(f"{node_prefix(root)}{path}")) for path in NODE_LOCAL_PATHS]


def enroot_path_entry(root: Path) -> str:
    """What slurmd's PATH gains so that Pyxis finds `enroot` (/usr/bin on a node)."""
    return str(node_prefix(root) / "usr" / "bin")


def suite_site(root: Path, tracking: ProcessTracking, slurm_prefix: Path) -> SlurmSite:
    """Production's site but for paths under `root`, the bridge address, our ports, and
    short timeouts so that a missed ping shows within seconds. Pyxis is `required`, as in
    production, at its production path under node_prefix. The health check finds the
    suite's Slurm (built into `slurm_prefix`) where a node's PATH finds /usr/bin's."""
    production = SlurmSite()
    return SlurmSite(
        controller_hostname=socket.gethostname().split(".")[0],
        controller_addr=CONTROLLER_IP,
        slurmctld_port=SLURMCTLD_PORT,
        slurmd_port=SLURMD_PORT,
        slurm_user="root",
        config_dir=str(root / "etc"),
        state_save_location=str(root / "state"),
        slurmd_spool_dir=str(root / "spool" / "%n"),
        slurmctld_pid_file=str(root / "run" / "slurmctld.pid"),
        slurmd_pid_file=str(root / "run" / "slurmd-%n.pid"),
        slurmctld_log_file=str(root / "log" / "slurmctld.log"),
        slurmd_log_file=str(root / "log" / "slurmd-%n.log"),
        munge_socket=str(munge_socket(root)),
        cred_expire_seconds=5,
        slurmd_timeout=5,
        slurmctld_timeout=5,
        # Slurm's default, not shorter: on two loaded cores Slurm 24.11's RPCs (a login's srun
        # through sackd, salloc) took over 3 s and failed "Socket timed out on send/recv".
        # A node that died refuses connections at once: SlurmdTimeout still finds it fast.
        message_timeout=10,
        sched_interval=2,
        bf_interval=1,
        trust_node_config=True,
        healthcheck_program=str(root / "healthcheck.sh"),
        # The Prolog's refresh of the node names keeps this file, not the machine's /etc/hosts.
        node_hosts_program=str(root / "node-hosts.sh"),
        hosts_file=str(root / "hosts"),
        healthcheck_interval=2,
        healthcheck_path=":".join(
            (
                str(root / "bin"),
                str(slurm_prefix / "sbin"),
                str(slurm_prefix / "bin"),
                "/usr/sbin:/usr/bin:/sbin:/bin",
            )
        ),
        healthcheck_slurm_conf=str(root / "etc" / "slurm.conf"),
        mount_root=str(root / "mnt"),
        pyxis_library=f"{node_prefix(root)}{production.pyxis_library}",
        pyxis_runtime_path=f"{node_prefix(root)}{production.pyxis_runtime_path}",
        proctrack_type=tracking.proctrack_type,
        task_plugin=tracking.task_plugin,
        # Nothing places the session cluster's nodes under a switch, and under topology/tree
        # an unplaced node takes no job: test_topology.py runs tree on this cluster itself.
        topology_plugin="topology/flat",
        accounting=AccountingSite(
            slurmdbd_port=SLURMDBD_PORT,
            slurmdbd_pid_file=str(root / "run" / "slurmdbd.pid"),
            slurmdbd_log_file=str(root / "log" / "slurmdbd.log"),
            storage_conf=str(root / "etc" / "slurmdbd-storage.conf"),
            jwt_key=str(root / "etc" / "jwt_hs256.key"),
            jobacct_gather_type=(
                "jobacct_gather/cgroup"
                if tracking.proctrack_type == "proctrack/cgroup"
                else "jobacct_gather/linux"
            ),
        ),
        rest_api=RestApiSite(
            user=RESTD_USER,
            group=RESTD_GROUP,
            program=str(slurm_prefix / "sbin" / "slurmrestd"),
            address_file=str(root / "etc" / "slurmrestd.address"),
        ),
    )


# The suite's GPUs: device files every host has, which Slurm only opens for cgroup rules.
FAKE_GPU_DEVICE_PREFIX = "/dev/tty"


def write_fake_nvml(site: SlurmSite, node: str, instance: InstanceType, gpus: int | None = None) -> None:
    """What NVML would report on a node of `instance` (`gpus` of its GPUs, all by default),
    where that node's configless slurmd looks for Slurm's stand-in (tests/fake_nvml.py): its
    configuration cache, beside the files slurmctld sends, which slurmd rewrites one by one
    and leaves this one alone."""
    cache = Path(site.slurmd_spool_dir.replace("%n", node)) / "conf-cache"
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "fake_gpus.conf").write_text(fake_gpus_conf(instance, FAKE_GPU_DEVICE_PREFIX, gpus))


def gpu_override_dir(root: Path) -> Path:
    """Where a test writes a node's GPU count to make the fake nvidia-smi report it."""
    return root / "fake-gpus"


def write_site_files(
    cfg: ClusterConfig,
    group: ComputeGroupConfig,
    site: SlurmSite,
    root: Path,
    teardown: Teardown,
    pyxis_build: Path,
    accounting: AccountingSettings | None = None,
) -> None:
    """Everything slurmctld and slurmd read (slurmdbd too, with `accounting`); `pyxis_build`
    is the spank_pyxis.so built for this Slurm, linked where plugstack.conf loads it."""
    library = Path(site.pyxis_library)
    library.parent.mkdir(parents=True, exist_ok=True)
    library.symlink_to(pyxis_build)
    for sub in ("state", "spool", "run", "log", "bin", "jobs", "fake-gpus"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for path, text in slurm_conf.render_slurm_files(resolve(cfg), site, accounting).by_path(site).items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    if accounting is not None and accounting.runs_slurmdbd:
        # slurmdbd refuses a configuration file others can read.
        Path(slurm_conf.slurmdbd_conf_path(site)).chmod(0o600)
    healthcheck = Path(site.healthcheck_program)
    healthcheck.write_text(healthcheck_of(cfg, group, site))
    healthcheck.chmod(0o755)
    Path(site.hosts_file).write_text(Path("/etc/hosts").read_text())
    # The agent runs from the bundle's agents tree with this interpreter, as a node's does.
    agents = root / "agents"
    agents.mkdir(exist_ok=True)
    write_tree(agent_tree(NODE_AGENTS), agents)
    hosts_program = Path(site.node_hosts_program)
    hosts_program.write_text(node_hosts.program(resolve(cfg), site, str(agents), python=sys.executable))
    hosts_program.chmod(0o755)
    tools = {
        "nvidia-smi": FAKE_NVIDIA_SMI.format(override_dir=gpu_override_dir(root)),
        "fi_info": FAKE_FI_INFO.format(count=efa_count(group.instance) if group.efa else 0),
        "systemctl": FAKE_SYSTEMCTL.format(unit=FABRIC_MANAGER_UNIT),
    }
    for name, text in tools.items():
        (root / "bin" / name).write_text(text)
        (root / "bin" / name).chmod(0o755)
    _mount_shared_file_systems(cfg, site, teardown)


def _mount_shared_file_systems(cfg: ClusterConfig, site: SlurmSite, teardown: Teardown) -> None:
    """Bind mounts stand in for EFS /home and FSx: the health check needs mount points."""
    for mount in slurm_conf.required_mounts(resolve(cfg), site):
        Path(mount).mkdir(parents=True, exist_ok=True)
        run("mount", "--bind", mount, mount)
        teardown.push(f"mount {mount}", lambda m=mount: run("umount", "-l", m, check=False))

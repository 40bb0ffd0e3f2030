"""A real Slurm cluster on one machine: slurmctld on the host and dynamic slurmd nodes.

Each compute node is a `slurmd -Z` in its own network namespace (network.py). Every
Slurm program runs from one `SlurmInstall` (installs.py): the pinned build. The
configuration is what gpucluster renders for an example config; only the `SlurmSite`
inputs (host names, paths, ports, timeouts; site_files.py) differ from production.

Every resource made here is recorded and released by `Teardown`, in reverse order, also
when a step fails half-way.
"""

from __future__ import annotations

import functools
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster import names
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.launch.node_lib import node_lib_files
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm.accounting import AccountingSettings
from gpucluster.slurm.conf import SlurmSite
from tests.integration.accounting import SuiteAccounting
from tests.integration.containers import make_node_enroot_directories
from tests.integration.daemons import DEFAULT_SOCKET_DIR, DnsServer, Munge
from tests.integration.host import HarnessError, Teardown, kill_pid, require_free_port, run, wait_for
from tests.integration.installs import SlurmInstall
from tests.integration.network import Network, netns_pids, with_hosts, write_named_hosts
from tests.integration.prerequisites import ProcessTracking, process_tracking
from tests.integration.queries import node_states, one_record
from tests.integration.runs import Reclaimed, marked
from tests.integration.site_files import (
    SLURMCTLD_PORT,
    enroot_path_entry,
    gpu_override_dir,
    node_local_binds,
    suite_site,
    write_fake_nvml,
    write_site_files,
)

SLURM_CONF_LINK = Path("/run/slurm/conf")
EPILOG_ENROOT_DIR = Path("/usr/local/bin")


@functools.cache
def slurmd_memlock() -> str:
    """The locked-memory limit test nodes' slurmd runs with, as prlimit writes it: unlimited, as
    production's unit gives it (LimitMEMLOCK=infinity, lib/slurm.sh), where this host lets
    the suite raise it; raising a hard limit needs CAP_SYS_RESOURCE, which a container may
    lack, and then slurmd keeps the suite's own hard limit (jobs must still get that, not the
    submitting shell's)."""
    if run("prlimit", "--memlock=unlimited", "true", check=False).returncode == 0:
        return "unlimited"
    return str(resource.getrlimit(resource.RLIMIT_MEMLOCK)[1])


@dataclass
class SlurmCluster:
    """The rendered configuration of one compute group of `cfg`, run for real."""

    cfg: ClusterConfig
    group: ComputeGroupConfig
    root: Path
    teardown: Teardown
    network: Network
    install: SlurmInstall
    # spank_pyxis.so built for this install's Slurm (vendor_builds.pyxis_library).
    pyxis_build: Path
    munge: Munge
    tracking: ProcessTracking = field(default_factory=process_tracking)
    # What the cluster's accounting renders from (tests/integration/accounting.py).
    accounting: AccountingSettings | None = None
    accounting_daemons: SuiteAccounting | None = None
    # What this run's start ended of an interrupted earlier run (runs.py).
    reclaimed: Reclaimed | None = None
    nodes: dict[str, ComputeNode] = field(default_factory=dict)
    controller: subprocess.Popen | None = None
    resolv_conf: Path | None = None

    @property
    def site(self) -> SlurmSite:
        return suite_site(self.root, self.tracking, self.install.prefix)

    @property
    def env(self) -> dict[str, str]:
        slurm_conf_path = str(self.root / "etc" / "slurm.conf")
        return marked(self.root, {"PATH": os.environ["PATH"], "SLURM_CONF": slurm_conf_path})

    @property
    def gpu_override_dir(self) -> Path:
        return gpu_override_dir(self.root)

    @property
    def etc_hosts(self) -> Path:
        """The daemons' /etc/hosts (network.write_named_hosts)."""
        return self.root / "etc-hosts"

    def write_files(self) -> None:
        write_named_hosts(self.etc_hosts)
        write_site_files(
            self.cfg, self.group, self.site, self.root, self.teardown, self.pyxis_build, self.accounting
        )

    def start_controller(self) -> None:
        require_free_port(SLURMCTLD_PORT)
        log = open(self.root / "log" / "slurmctld.stdout", "ab")  # noqa: SIM115 - kept by Popen
        self.controller = subprocess.Popen(
            with_hosts(self.etc_hosts, self.install.command(["slurmctld", "-D"])),
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        wait_for("slurmctld to answer", self._controller_answers, timeout=30)

    def stop_controller(self, hard: bool) -> None:
        if self.controller is None:
            return
        self.controller.send_signal(signal.SIGKILL if hard else signal.SIGTERM)
        self.controller.wait(timeout=30)
        self.controller = None

    def _controller_answers(self) -> bool:
        if self.controller is not None and self.controller.poll() is not None:
            raise HarnessError(f"slurmctld exited {self.controller.returncode}; see {self.root / 'log'}")
        return self.slurm("scontrol", "ping", check=False).stdout.find("is UP") >= 0

    def dns(self) -> Path:
        """dnsmasq serving the private zone's records, started once per cluster: the
        resolv.conf that sends a host's lookups to it."""
        if self.resolv_conf is None:
            zone = names.private_zone(self.cfg)
            server = DnsServer(
                self.root, self.teardown, zone, names.controller_host(self.cfg), SLURMCTLD_PORT
            )
            self.resolv_conf = server.start()
        return self.resolv_conf

    def install_node_lib(self, cfg: ClusterConfig | None = None) -> str:
        """gpucluster.launch.node_lib's files (gpu-env.sh, the trainer) where the jobs rendered
        for the suite look for them, as a compute node keeps them under /opt/gpucluster/lib;
        the test nodes share this file system. Returns that directory."""
        lib_dir = self.root / "lib"
        resolved = resolve(cfg or self.cfg)
        for path, text in node_lib_files(resolved, resolved.group(self.group.name), str(lib_dir)).items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        return str(lib_dir)

    def add_node(self, index: int, instance_id: str) -> ComputeNode:
        """A node in namespace `index`, which lives until the session ends: no two tests may
        use one index (test files keep to their own: 3, 4, 6, 20-29, 30 and up)."""
        namespace, address = self.network.add_namespace(index)
        node = ComputeNode(
            cluster=self,
            name=slurm_conf.node_name(self.group.name, instance_id),
            namespace=namespace,
            address=address,
        )
        self.nodes[node.name] = node
        return node

    def slurm(
        self, *args: str, check: bool = True, env: dict[str, str] | None = None, timeout: float = 30
    ) -> subprocess.CompletedProcess:
        """A Slurm command of this cluster's install; `env` replaces the cluster's."""
        return run(*self.install.command(args), env=env or self.env, check=check, timeout=timeout)

    def show(self, kind: str, name: str) -> dict[str, str]:
        """`scontrol -o show <kind> <name>` as a dict; fails when slurmctld has no such thing."""
        return one_record(self.slurm("scontrol", "-o", "show", kind, name).stdout)

    def node_info(self, name: str) -> dict[str, str] | None:
        """`scontrol show node` as a dict, or None when slurmctld has no such node."""
        result = self.slurm("scontrol", "-o", "show", "node", name, check=False)
        if result.returncode != 0 or not result.stdout.strip():
            return None
        return one_record(result.stdout)

    def job_info(self, job_id: str) -> dict[str, str]:
        return self.show("job", job_id)

    def submit(self, *args: str, script: str) -> str:
        path = self.root / "jobs" / f"job-{time.monotonic_ns()}.sh"
        path.write_text("#!/bin/bash\n" + script)
        result = self.slurm("sbatch", "--parsable", f"--chdir={self.root / 'jobs'}", *args, str(path))
        return result.stdout.strip().split(";")[0]

    def wait_state_saved(self, since: float) -> None:
        """Wait until slurmctld has written its job state after `since` (a time.time())."""
        job_state = Path(self.site.state_save_location) / "job_state"
        wait_for(
            "slurmctld to save its job state",
            lambda: job_state.exists() and job_state.stat().st_mtime > since,
            timeout=30,
        )

    def wait_job_state(self, job_id: str, states: set[str], timeout: float) -> dict[str, str]:
        def probe() -> dict[str, str] | None:
            info = self.job_info(job_id)
            return info if info["JobState"] in states else None

        return wait_for(f"job {job_id} in {sorted(states)}", probe, timeout)

    def wait_node_state(self, name: str, predicate: Callable[[set[str]], bool], what: str, timeout: float):
        def probe() -> dict[str, str] | None:
            info = self.node_info(name)
            return info if info is not None and predicate(node_states(info)) else None

        return wait_for(f"node {name} {what}", probe, timeout)


@dataclass
class ComputeNode:
    cluster: SlurmCluster
    name: str
    namespace: str
    address: str
    process: subprocess.Popen | None = None

    def start(self, conf_line: str, resolv_conf: Path | None = None, nvml_gpus: int | None = None) -> None:
        """`slurmd -Z` as the compute bootstrap starts it, with the --conf line.

        slurmd runs in a private mount namespace where its node-local directories
        (site_files.node_local_binds) are bound over the shared paths. Without `resolv_conf`
        it finds the controller by --conf-server. With it, slurmd gets no --conf-server and
        looks up the `_slurmctld._tcp` SRV record through that resolver, bound over
        /etc/resolv.conf for slurmd alone. nsenter joins only the network namespace:
        `ip netns exec` would remount /sys and slurmd would find no cgroup file system.
        NVML's stand-in reports the group's GPUs, or `nvml_gpus` of them.
        """
        slurmd = ["slurmd", "-D", "-Z", "-N", self.name, "--conf", conf_line]
        self.cluster.network.reconnect(self.address)
        if resolv_conf is None:
            slurmd[1:1] = [
                "--conf-server",
                slurm_conf.conf_server(resolve(self.cluster.cfg), self.cluster.site),
            ]
        write_fake_nvml(self.cluster.site, self.name, self.cluster.group.instance, nvml_gpus)
        binds = node_local_binds(self.cluster.root, self.name)
        for source, target in binds:
            source.mkdir(parents=True, exist_ok=True)
            target.mkdir(parents=True, exist_ok=True)
        munge = self.cluster.munge
        node_munge = munge.node_socket_dir(self.name)
        binds += [(node_munge, DEFAULT_SOCKET_DIR), (node_munge, munge.socket_dir)]
        make_node_enroot_directories(self.cluster.root, self.name)
        if Path(sys.executable).resolve().is_relative_to(EPILOG_ENROOT_DIR):
            raise HarnessError(f"the jobs' Python lives in {EPILOG_ENROOT_DIR}, which slurmd's nodes cover")
        # Pyxis's job epilog (container_scope=job) runs `enroot list` with PATH
        # /usr/local/bin:/usr/bin:/bin (pyxis_slurmd.c), where a node has Enroot (/usr/bin);
        # the suite's Enroot is under node_prefix, bound at /usr/local/bin for slurmd alone.
        binds.append((Path(enroot_path_entry(self.cluster.root)), EPILOG_ENROOT_DIR))
        binds.append((self.cluster.etc_hosts, Path("/etc/hosts")))
        if resolv_conf is not None:
            binds.append((resolv_conf, Path("/etc/resolv.conf")))
        # Its own host name too, the node's name as the compute bootstrap sets it
        # (name_compute_node): Slurm 25.11 forwards through slurmd by NodeHostName, and
        # nodes that share this machine's name cannot be told apart ("Duplicated
        # NodeHostName", "unable to split forward hostlist").
        command = [
            # Jobs keep slurmd's memlock (PropagateResourceLimitsExcept=MEMLOCK).
            "prlimit",
            f"--memlock={slurmd_memlock()}",
            "unshare",
            "--mount",
            "--uts",
            "--propagation=private",
            "sh",
            "-c",
            'hostname "$0"; while [ "$1" != -- ]; do mount --bind "$1" "$2"; shift 2; done; shift; exec "$@"',
            self.name,
            *(str(path) for pair in binds for path in pair),
            "--",
            "nsenter",
            f"--net=/var/run/netns/{self.namespace}",
            *self.cluster.install.command(slurmd),
        ]
        log = open(self.cluster.root / "log" / f"slurmd-{self.name}.stdout", "ab")  # noqa: SIM115
        # Pyxis runs `enroot` from slurmstepd's PATH, which is slurmd's.
        path = f"{enroot_path_entry(self.cluster.root)}:{os.environ['PATH']}"
        self.process = subprocess.Popen(
            command, env=marked(self.cluster.root, {"PATH": path}), stdout=log, stderr=subprocess.STDOUT
        )

    def kill(self) -> None:
        """The instance dies: slurmd, its slurmstepds and every job process in the namespace,
        and its address stops answering."""
        self.cluster.network.cut_off(self.address)
        for pid in netns_pids(self.namespace):
            kill_pid(pid)
        if self.process is not None:
            # Not in the namespace yet while its wrappers still bind the node's directories.
            kill_pid(self.process.pid)
            self.process.wait(timeout=10)
            self.process = None
        wait_for(f"{self.namespace} to be empty", lambda: not netns_pids(self.namespace), timeout=10)

"""A real Slurm cluster on one machine: munged, slurmctld, and dynamic slurmd nodes.

Each compute node is a `slurmd -Z` in its own network namespace, joined to the
controller by a veth pair on a private bridge (10.213.0.0/24). The configuration
is what gpucluster renders for an example config; only the `SlurmSite` inputs
(host names, paths, ports, timeouts) differ from production.

Every resource made here is recorded and released by `Teardown`, in reverse
order, also when a step fails half-way.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gpucluster import slurm_conf
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.health_probes import FABRIC_MANAGER_UNIT
from gpucluster.slurm_conf import SlurmSite

SUBNET = ipaddress.IPv4Network("10.213.0.0/24")
CONTROLLER_IP = "10.213.0.1"
BRIDGE = "gcslurm0"
NETNS_PREFIX = "gcslurm-"
SLURMCTLD_PORT = 16817
SLURMD_PORT = 16818
# Slurm 22.05's configless slurmd fetches its configuration before it knows AuthInfo,
# so it always talks to munged on the default socket.
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
SLURM_CONF_LINK = Path("/run/slurm/conf")

T = TypeVar("T")


class HarnessError(RuntimeError):
    pass


def run(*args: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 30):
    result = subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise HarnessError(
            f"{' '.join(args)} exited {result.returncode}: {result.stderr.strip() or result.stdout.strip()}"
        )
    return result


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T:
    """Poll `probe` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what} (last seen: {last!r})")


def missing_prerequisites() -> str | None:
    """Why this machine cannot run the suite, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, slurmd, munged)"
    for tool in ("slurmctld", "slurmd", "munged", "munge", "scontrol", "sbatch", "ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install slurm-wlm slurm-client munge iproute2)"
    probe = f"{NETNS_PREFIX}probe"
    result = run("ip", "netns", "add", probe, check=False)
    if result.returncode != 0:
        return f"cannot create network namespaces: {result.stderr.strip()}"
    run("ip", "netns", "del", probe, check=False)
    return None


def installed_slurm_release() -> str:
    """The release of this host's slurmctld ("slurm-wlm 22.05.8" -> "22.05.8")."""
    output = run("slurmctld", "-V").stdout
    match = re.search(r"(\d+\.\d+\.\d+)", output)
    if match is None:
        raise HarnessError(f"cannot read a release from `slurmctld -V`: {output.strip()!r}")
    return match[1]


def for_installed_slurm(cfg: ClusterConfig) -> ClusterConfig:
    """`cfg` rendered for the Slurm this host runs, as a node renders for the image's Slurm
    (software.slurm): TreeWidth depends on the release."""
    software = cfg.software.model_copy(update={"slurm": installed_slurm_release()})
    return cfg.model_copy(update={"software": software})


@dataclass(frozen=True)
class ProcessTracking:
    proctrack_type: str
    task_plugin: str
    why: str | None  # None: production's cgroup plugins


def process_tracking(mounts: str | None = None) -> ProcessTracking:
    """Production's cgroup plugins, unless this host cannot run them for a hand-started slurmd.

    On a cgroup v2-only host, Slurm 22.05's cgroup/v2 plugin asks systemd over D-Bus for a
    scope to hold slurmstepd; without a system bus slurmd stops with
    "cgroup_dbus_attach_to_scope: cannot connect to dbus system daemon". Only then does the
    suite track processes by /proc and bind no tasks. cgroup v1 and hybrid hosts, and v2
    hosts with systemd, run production's plugins.
    """
    table = mounts if mounts is not None else Path("/proc/mounts").read_text()
    unified = any(
        fields[1] == "/sys/fs/cgroup" and fields[2] == "cgroup2"
        for fields in (line.split() for line in table.splitlines())
        if len(fields) > 2
    )
    site = SlurmSite()
    if unified and not Path("/run/dbus/system_bus_socket").exists():
        return ProcessTracking(
            "proctrack/linuxproc",
            "task/none",
            "cgroup v2 without a systemd D-Bus: Slurm 22.05 cannot make its slurmstepd scope",
        )
    return ProcessTracking(site.proctrack_type, site.task_plugin, None)


class Teardown:
    """Undo steps, run newest first; every step runs even when an earlier one fails."""

    def __init__(self) -> None:
        self._steps: list[tuple[str, Callable[[], None]]] = []

    def push(self, what: str, step: Callable[[], None]) -> None:
        self._steps.append((what, step))

    def run(self) -> list[str]:
        problems = []
        while self._steps:
            what, step = self._steps.pop()
            try:
                step()
            except Exception as error:  # noqa: BLE001 - teardown must go on and report
                problems.append(f"{what}: {error}")
        return problems


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _require_free_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            raise HarnessError(
                f"TCP port {port} is taken ({error.strerror}); a slurmctld left by an interrupted "
                f"run? Find it with `ss -ltnp sport = :{port}` and stop it"
            ) from error


def netns_pids(name: str) -> list[int]:
    result = run("ip", "netns", "pids", name, check=False)
    return [int(pid) for pid in result.stdout.split()]


@dataclass
class Network:
    """A bridge on the host holding the controller's address, one namespace per node."""

    teardown: Teardown
    namespaces: list[str] = field(default_factory=list)

    def create(self) -> None:
        self._remove_leftovers()
        run("ip", "link", "add", BRIDGE, "type", "bridge")
        self.teardown.push("bridge", lambda: run("ip", "link", "del", BRIDGE, check=False))
        run("ip", "addr", "add", f"{CONTROLLER_IP}/{SUBNET.prefixlen}", "dev", BRIDGE)
        run("ip", "link", "set", BRIDGE, "up")

    def add_namespace(self, index: int) -> tuple[str, str]:
        """A namespace with lo and eth0 up at 10.213.0.<10+index>; returns (name, address)."""
        name = f"{NETNS_PREFIX}n{index}"
        address = str(SUBNET.network_address + 10 + index)
        host_side = f"gcs-n{index}"
        run("ip", "netns", "add", name)
        self.teardown.push(f"namespace {name}", lambda: self._delete_namespace(name, host_side))
        run("ip", "link", "add", host_side, "type", "veth", "peer", "name", "eth0", "netns", name)
        run("ip", "link", "set", host_side, "master", BRIDGE, "up")
        run("ip", "-n", name, "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0")
        run("ip", "-n", name, "link", "set", "eth0", "up")
        run("ip", "-n", name, "link", "set", "lo", "up")
        self.namespaces.append(name)
        return name, address

    def _delete_namespace(self, name: str, host_side: str) -> None:
        def emptied() -> bool:
            pids = netns_pids(name)
            for pid in pids:
                _kill(pid)
            return not pids

        wait_for(f"every process in {name} to die", emptied, timeout=10)
        run("ip", "link", "del", host_side, check=False)
        run("ip", "netns", "del", name, check=False)

    def _remove_leftovers(self) -> None:
        """A previous run killed before its teardown leaves our names behind: reclaim them."""
        for line in run("ip", "netns", "list").stdout.splitlines():
            name = line.split()[0] if line.split() else ""
            if name.startswith(NETNS_PREFIX):
                index = name.removeprefix(f"{NETNS_PREFIX}n")
                self._delete_namespace(name, f"gcs-n{index}")
        run("ip", "link", "del", BRIDGE, check=False)


def leftovers() -> list[str]:
    """What of the suite's network still exists (checked after teardown)."""
    found = [
        f"network namespace {line.split()[0]}"
        for line in run("ip", "netns", "list").stdout.splitlines()
        if line.startswith(NETNS_PREFIX)
    ]
    if run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        found.append(f"bridge {BRIDGE}")
    return found


@dataclass
class Munge:
    """munged on the default socket: an already running one is used, else one is started."""

    root: Path
    teardown: Teardown

    def ensure(self) -> None:
        if self._answers():
            return
        run_dir = MUNGE_SOCKET.parent
        if not run_dir.exists():
            run_dir.mkdir(mode=0o755, parents=True)
            self.teardown.push("munge run dir", lambda: shutil.rmtree(run_dir, ignore_errors=True))
        key = self.root / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        pid_file = self.root / "munged.pid"
        run(
            "munged",
            f"--key-file={key}",
            f"--socket={MUNGE_SOCKET}",
            f"--pid-file={pid_file}",
            f"--log-file={self.root / 'munged.log'}",
            f"--seed-file={self.root / 'munged.seed'}",
        )
        self.teardown.push("munged", lambda: self._stop(pid_file))
        wait_for("munged to answer", self._answers, timeout=10)

    def _stop(self, pid_file: Path) -> None:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        wait_for("munged to exit", lambda: not Path(f"/proc/{pid}").exists(), timeout=10)

    @staticmethod
    def _answers() -> bool:
        if not MUNGE_SOCKET.exists():
            return False
        encode = subprocess.run(["munge", "-n", "-S", str(MUNGE_SOCKET)], capture_output=True)
        if encode.returncode != 0:
            return False
        decode = subprocess.run(
            ["unmunge", "-S", str(MUNGE_SOCKET)], input=encode.stdout, capture_output=True
        )
        return decode.returncode == 0


@dataclass
class DnsServer:
    """dnsmasq on the bridge address, answering only for the cluster's private zone: the
    `_slurmctld._tcp` SRV record and the controller's A record, as Route 53 does on AWS."""

    root: Path
    teardown: Teardown
    zone: str
    controller_name: str
    port: int

    def start(self) -> Path:
        """Start dnsmasq; returns a resolv.conf that sends a node's lookups to it."""
        if shutil.which("dnsmasq") is None:
            raise HarnessError("dnsmasq is not installed (apt-get install dnsmasq-base)")
        pid_file = self.root / "run" / "dnsmasq.pid"
        run(
            "dnsmasq",
            "--conf-file=/dev/null",
            "--no-resolv",
            "--no-hosts",
            "--bind-interfaces",
            f"--listen-address={CONTROLLER_IP}",
            "--port=53",
            f"--pid-file={pid_file}",
            f"--log-facility={self.root / 'log' / 'dnsmasq.log'}",
            "--log-queries",
            f"--srv-host=_slurmctld._tcp.{self.zone},{self.controller_name},{self.port}",
            f"--host-record={self.controller_name},{CONTROLLER_IP}",
        )
        self.teardown.push("dnsmasq", lambda: _kill(int(pid_file.read_text())))
        resolv = self.root / "resolv.conf"
        resolv.write_text(f"nameserver {CONTROLLER_IP}\nsearch {self.zone}\n")
        return resolv


FAKE_NVIDIA_SMI = """#!/bin/bash
# Test stand-in: 8 GPUs, or the count written in {override_dir}/<node name>.
count=8
if [[ -n "${{SLURMD_NODENAME:-}}" && -f "{override_dir}/${{SLURMD_NODENAME}}" ]]; then
  count=$(cat "{override_dir}/${{SLURMD_NODENAME}}")
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


@dataclass
class SlurmCluster:
    """The rendered configuration of one compute group of `cfg`, run for real."""

    cfg: ClusterConfig
    group: ComputeGroupConfig
    root: Path
    teardown: Teardown
    network: Network
    tracking: ProcessTracking = field(default_factory=process_tracking)
    nodes: dict[str, ComputeNode] = field(default_factory=dict)
    controller: subprocess.Popen | None = None

    @property
    def site(self) -> SlurmSite:
        root = self.root
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
            cred_expire_seconds=5,
            slurmd_timeout=5,
            slurmctld_timeout=5,
            message_timeout=3,
            sched_interval=2,
            bf_interval=1,
            trust_node_config=True,
            gpu_device_prefix="/dev/tty",
            healthcheck_program=str(root / "healthcheck.sh"),
            healthcheck_interval=2,
            healthcheck_path=f"{root / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
            healthcheck_slurm_conf=str(root / "etc" / "slurm.conf"),
            mount_root=str(root / "mnt"),
            pyxis_required=False,
            proctrack_type=self.tracking.proctrack_type,
            task_plugin=self.tracking.task_plugin,
        )

    @property
    def env(self) -> dict[str, str]:
        return {"PATH": os.environ["PATH"], "SLURM_CONF": str(self.root / "etc" / "slurm.conf")}

    @property
    def gpu_override_dir(self) -> Path:
        return self.root / "fake-gpus"

    def write_files(self) -> None:
        site = self.site
        for sub in ("state", "spool", "run", "log", "bin", "jobs", "fake-gpus"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        for path, text in slurm_conf.render_slurm_files(self.cfg, site).by_path(site).items():
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text)
        healthcheck = Path(site.healthcheck_program)
        healthcheck.write_text(slurm_conf.render_healthcheck(self.cfg, self.group, site))
        healthcheck.chmod(0o755)
        tools = {
            "nvidia-smi": FAKE_NVIDIA_SMI.format(override_dir=self.gpu_override_dir),
            "fi_info": FAKE_FI_INFO.format(count=self._efa_count()),
            "systemctl": FAKE_SYSTEMCTL.format(unit=FABRIC_MANAGER_UNIT),
        }
        for name, text in tools.items():
            (self.root / "bin" / name).write_text(text)
            (self.root / "bin" / name).chmod(0o755)
        self._mount_shared_file_systems(site)

    def _efa_count(self) -> int:
        from gpucluster.efa import efa_count

        return efa_count(self.group.instance) if self.group.efa else 0

    def _mount_shared_file_systems(self, site: SlurmSite) -> None:
        """Bind mounts stand in for EFS /home and FSx: the health check needs mount points."""
        for mount in slurm_conf.required_mounts(self.cfg, site):
            Path(mount).mkdir(parents=True, exist_ok=True)
            run("mount", "--bind", mount, mount)
            self.teardown.push(f"mount {mount}", lambda m=mount: run("umount", "-l", m, check=False))

    def start_controller(self) -> None:
        _require_free_port(SLURMCTLD_PORT)
        log = open(self.root / "log" / "slurmctld.stdout", "ab")  # noqa: SIM115 - kept by Popen
        self.controller = subprocess.Popen(
            ["slurmctld", "-D"], env=self.env, stdout=log, stderr=subprocess.STDOUT
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
        return run("scontrol", "ping", env=self.env, check=False).stdout.find("is UP") >= 0

    def add_node(self, index: int, instance_id: str) -> ComputeNode:
        namespace, address = self.network.add_namespace(index)
        node = ComputeNode(
            cluster=self,
            name=slurm_conf.node_name(self.group.name, instance_id),
            namespace=namespace,
            address=address,
        )
        self.nodes[node.name] = node
        return node

    def slurm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return run(*args, env=self.env, check=check)

    def node_info(self, name: str) -> dict[str, str] | None:
        """`scontrol show node` as a dict, or None when slurmctld has no such node."""
        result = self.slurm("scontrol", "-o", "show", "node", name, check=False)
        if result.returncode != 0 or not result.stdout.strip():
            return None
        return parse_record(result.stdout)

    def job_info(self, job_id: str) -> dict[str, str]:
        return parse_record(self.slurm("scontrol", "-o", "show", "job", job_id).stdout)

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

    def start(self, conf_line: str, resolv_conf: Path | None = None) -> None:
        """`slurmd -Z` as the compute bootstrap starts it, with the --conf line.

        Without `resolv_conf` it finds the controller by --conf-server. With it, slurmd
        gets no --conf-server and looks up the `_slurmctld._tcp` SRV record through that
        resolver: a private mount namespace shows it as /etc/resolv.conf to slurmd alone.
        nsenter joins only the network namespace: `ip netns exec` would remount /sys and
        slurmd would find no cgroup file system.
        """
        slurmd = ["slurmd", "-D", "-Z", "-N", self.name, "--conf", conf_line]
        if resolv_conf is None:
            slurmd[1:1] = ["--conf-server", slurm_conf.conf_server(self.cluster.cfg, self.cluster.site)]
        command = ["nsenter", f"--net=/var/run/netns/{self.namespace}", *slurmd]
        if resolv_conf is not None:
            command = [
                "unshare",
                "--mount",
                "--propagation=private",
                "sh",
                "-c",
                'mount --bind "$0" /etc/resolv.conf && exec "$@"',
                str(resolv_conf),
                *command,
            ]
        log = open(self.cluster.root / "log" / f"slurmd-{self.name}.stdout", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(
            command, env={"PATH": os.environ["PATH"]}, stdout=log, stderr=subprocess.STDOUT
        )

    def kill(self) -> None:
        """The instance dies: slurmd, its slurmstepds and every job process in the namespace."""
        for pid in netns_pids(self.namespace):
            _kill(pid)
        if self.process is not None:
            self.process.wait(timeout=10)
            self.process = None
        wait_for(f"{self.namespace} to be empty", lambda: not netns_pids(self.namespace), timeout=10)


def parse_record(text: str) -> dict[str, str]:
    """One `scontrol -o show ...` record. Values run to the next ` Key=`, so they may hold spaces."""
    line = text.strip().splitlines()[0]
    keys = list(re.finditer(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=", line))
    record = {}
    for match, following in zip(keys, [*keys[1:], None], strict=True):
        end = following.start() if following is not None else len(line)
        record[match[1]] = line[match.end() : end].strip()
    return record


def node_states(info: dict[str, str]) -> set[str]:
    """`IDLE+DRAIN+DYNAMIC_NORM` -> {"IDLE", "DRAIN", "DYNAMIC_NORM"}; `IDLE*` -> {"IDLE",
    "NOT_RESPONDING"} (scontrol marks a node that misses pings with a trailing `*`)."""
    states = set()
    for part in info["State"].split("+"):
        if part.endswith("*"):
            states.add("NOT_RESPONDING")
        states.add(part.rstrip("*~#%$@!^-"))
    return states

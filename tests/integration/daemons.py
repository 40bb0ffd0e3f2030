"""The services a cluster leans on besides Slurm: munged for authentication, and dnsmasq
standing in for the Route 53 private zone."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.slurm.accounting import DEFAULT_MUNGE_SOCKET
from tests.integration.host import HarnessError, Teardown, kill_pid, run, wait_for
from tests.integration.network import CONTROLLER_IP
from tests.integration.runs import marked

# Where libmunge looks without being told: Slurm's configless fetch (slurmd, sackd) asks
# munged there before it has read AuthInfo. The suite never uses the host's: each node and
# the login have their run's munged bound over it in their own mount namespace.
DEFAULT_SOCKET_DIR = Path(DEFAULT_MUNGE_SOCKET).parent
SOCKET_NAME = Path(DEFAULT_MUNGE_SOCKET).name


def munge_socket(root: Path) -> Path:
    """The run's munged socket (AuthInfo=socket=): under the run's root, never the system's,
    whose munged (if any) the run did not start and whose key it does not know."""
    return root / "run" / "munge" / SOCKET_NAME


@dataclass
class Munge:
    """The run's own munged with a key of its own, on `munge_socket(root)`.

    Each compute node gets a munged of its own with the same key (`node_socket_dir`), as
    on EC2: from Slurm 25.11 a slurmd that forwards a launch passes the sender's
    credential on, and one munged shared by every node rejects the second decode as a
    replay ("Replayed credential"; srun: "Header lengths are longer than data received")."""

    root: Path
    teardown: Teardown
    node_dirs: dict[str, Path] = field(default_factory=dict)
    pid_files: list[Path] = field(default_factory=list)

    @property
    def key(self) -> Path:
        return self.root / "munge.key"

    @property
    def socket_dir(self) -> Path:
        return munge_socket(self.root).parent

    def start(self) -> None:
        if not DEFAULT_SOCKET_DIR.exists():
            # Only as the mount point of the nodes' and the login's binds.
            DEFAULT_SOCKET_DIR.mkdir(mode=0o755, parents=True)
            self.teardown.push("munge mount point", lambda: _remove_if_empty(DEFAULT_SOCKET_DIR))
        self.key.write_bytes(os.urandom(1024))
        self.key.chmod(0o400)
        self.socket_dir.mkdir(parents=True, exist_ok=True)
        # One step for every munged of the run, nodes' included, after every Slurm daemon
        # (pushed later, so undone first): each takes a moment to exit, so all are told at once.
        self.teardown.push("munged", self._stop)
        self._start(munge_socket(self.root), self.root / "munged")

    def node_socket_dir(self, node: str) -> Path:
        """The directory of `node`'s own munged socket, started on first use: its slurmd
        has it bound over both DEFAULT_SOCKET_DIR and `socket_dir`."""
        if node not in self.node_dirs:
            directory = self.root / "nodes" / node / "munge"
            directory.mkdir(parents=True, exist_ok=True)
            self._start(directory / SOCKET_NAME, directory / "munged")
            self.node_dirs[node] = directory
        return self.node_dirs[node]

    def _start(self, socket_path: Path, files: Path) -> None:
        pid_file = files.with_suffix(".pid")
        run(
            "munged",
            f"--key-file={self.key}",
            f"--socket={socket_path}",
            f"--pid-file={pid_file}",
            f"--log-file={files.with_suffix('.log')}",
            f"--seed-file={files.with_suffix('.seed')}",
            env=marked(self.root, {"PATH": os.environ["PATH"]}),
        )
        self.pid_files.append(pid_file)
        wait_for(f"munged on {socket_path} to answer", lambda: self._answers(socket_path), timeout=10)

    def _stop(self) -> None:
        pids = [int(pid_file.read_text()) for pid_file in self.pid_files]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        wait_for(
            f"{len(pids)} munged to exit",
            lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids),
            timeout=15,
        )

    @staticmethod
    def _answers(socket_path: Path) -> bool:
        if not socket_path.exists():
            return False
        encode = subprocess.run(["munge", "-n", "-S", str(socket_path)], capture_output=True)
        if encode.returncode != 0:
            return False
        decode = subprocess.run(["unmunge", "-S", str(socket_path)], input=encode.stdout, capture_output=True)
        return decode.returncode == 0


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):  # gone, or holding what another program put there
        directory.rmdir()


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
            env=marked(self.root, {"PATH": os.environ["PATH"]}),
        )
        self.teardown.push("dnsmasq", lambda: kill_pid(int(pid_file.read_text())))
        resolv = self.root / "resolv.conf"
        resolv.write_text(f"nameserver {CONTROLLER_IP}\nsearch {self.zone}\n")
        return resolv

"""The services a cluster leans on besides Slurm: munged for authentication, and dnsmasq
standing in for the Route 53 private zone."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.host import HarnessError, Teardown, kill_pid, run, wait_for
from tests.integration.network import CONTROLLER_IP

# Slurm 22.05's configless slurmd fetches its configuration before it knows AuthInfo,
# so it always talks to munged on the default socket.
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")


@dataclass
class Munge:
    """munged on the default socket: an already running one is used, else one is started.

    Each compute node gets a munged of its own with the same key (`node_socket_dir`), as
    on EC2: from Slurm 25.11 a slurmd that forwards a launch passes the sender's
    credential on, and one munged shared by every node rejects the second decode as a
    replay ("Replayed credential"; srun: "Header lengths are longer than data received")."""

    root: Path
    teardown: Teardown
    key: Path = Path("/etc/munge/munge.key")  # the running munged's, when one is reused
    node_dirs: dict[str, Path] = field(default_factory=dict)

    def ensure(self) -> None:
        if self._answers(MUNGE_SOCKET):
            return
        run_dir = MUNGE_SOCKET.parent
        if not run_dir.exists():
            run_dir.mkdir(mode=0o755, parents=True)
            self.teardown.push("munge run dir", lambda: shutil.rmtree(run_dir, ignore_errors=True))
        self.key = self.root / "munge.key"
        self.key.write_bytes(os.urandom(1024))
        self.key.chmod(0o400)
        self._start(MUNGE_SOCKET, self.root / "munged")

    def node_socket_dir(self, node: str) -> Path:
        """The directory of `node`'s own munged socket (bound over /run/munge for its
        slurmd), started on first use."""
        if node not in self.node_dirs:
            directory = self.root / "nodes" / node / "munge"
            directory.mkdir(parents=True, exist_ok=True)
            self._start(directory / MUNGE_SOCKET.name, directory / "munged")
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
        )
        self.teardown.push(f"munged on {socket_path}", lambda: self._stop(pid_file))
        wait_for(f"munged on {socket_path} to answer", lambda: self._answers(socket_path), timeout=10)

    def _stop(self, pid_file: Path) -> None:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
        wait_for("munged to exit", lambda: not Path(f"/proc/{pid}").exists(), timeout=10)

    @staticmethod
    def _answers(socket_path: Path) -> bool:
        if not socket_path.exists():
            return False
        encode = subprocess.run(["munge", "-n", "-S", str(socket_path)], capture_output=True)
        if encode.returncode != 0:
            return False
        decode = subprocess.run(["unmunge", "-S", str(socket_path)], input=encode.stdout, capture_output=True)
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
        self.teardown.push("dnsmasq", lambda: kill_pid(int(pid_file.read_text())))
        resolv = self.root / "resolv.conf"
        resolv.write_text(f"nameserver {CONTROLLER_IP}\nsearch {self.zone}\n")
        return resolv

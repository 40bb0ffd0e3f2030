"""A login node: a network namespace with no slurmd and no slurm.conf of its own, whose
Slurm commands find the controller the way the login bootstrap sets them up (roles.sh,
slurm.sh configure_slurm_client): through sackd from Slurm 23.11, else through the
`_slurmctld._tcp` SRV record of the private zone.

The login is one long-running process (sackd, or `sleep` where there is no sackd) in
the login's network namespace and in a private mount namespace of its install, with an
empty /run/slurm and /etc/slurm of its own: the configuration its commands read can only
come from sackd (or, without it, from DNS). Commands run in that process's namespaces and
root (`nsenter --target`), as on a host one logged into.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.integration.cluster import SlurmCluster
from tests.integration.daemons import DEFAULT_SOCKET_DIR
from tests.integration.host import HarnessError, run, wait_for
from tests.integration.runs import marked

SLURM_SH = Path(__file__).resolve().parents[2] / "templates" / "userdata" / "bundle" / "lib" / "slurm.sh"

# Hides whatever Slurm configuration the install's root has, gives sackd's configless fetch
# the run's munged where libmunge looks by default, then runs the login's process.
_PRIVATE_SLURM_DIRS = r"""
for dir in /run/slurm /etc/slurm; do mkdir -p "$dir" && mount -t tmpfs gcs-login "$dir"; done
mount --bind "$MUNGE_DIR" "$DEFAULT_MUNGE_DIR"
if [ -n "$RESOLV_CONF" ]; then mount --bind "$RESOLV_CONF" /etc/resolv.conf; fi
if [ -n "$PASSWD" ]; then mount --bind "$PASSWD" /etc/passwd; fi
exec "$@"
"""


@dataclass(frozen=True)
class SackdUnit:
    notify: bool  # Type=notify: systemd waits for READY=1 on NOTIFY_SOCKET
    argv: list[str]


def sackd_unit(conf_server: str) -> SackdUnit:
    """The sackd service the login bootstrap installs (slurm.sh, configure_slurm_client):
    its drop-in's Type and ExecStart, with this cluster's --conf-server."""
    text = SLURM_SH.read_text()
    block = re.search(r'install_unit_dropin sackd\.service "(.*?)"', text, re.DOTALL)
    if block is None:
        raise HarnessError(f"{SLURM_SH} installs no sackd.service drop-in")
    kind = re.search(r"^Type=(\S+)$", block[1], re.MULTILINE)
    start = re.search(r"^ExecStart=/usr/sbin/(sackd .*)$", block[1], re.MULTILINE)
    if kind is None or start is None:
        raise HarnessError(f"the sackd drop-in in {SLURM_SH} lacks Type= or ExecStart=/usr/sbin/sackd")
    return SackdUnit(notify=kind[1] == "notify", argv=start[1].replace("${CONF_SERVER}", conf_server).split())


@dataclass
class LoginNode:
    cluster: SlurmCluster
    namespace: str
    process: subprocess.Popen | None = None
    notify: socket.socket | None = None

    def start(
        self,
        argv: list[str],
        resolv_conf: Path | None = None,
        notify: bool = False,
        passwd: Path | None = None,
    ) -> None:
        """Run `argv` (sackd, or a placeholder) as the login's long-running process; `passwd`
        replaces /etc/passwd there (a person the login knows and the head does not). With
        `notify`, it is a systemd Type=notify service (sackd --systemd, as the login's unit
        runs it, stays in the foreground and refuses to start without NOTIFY_SOCKET): wait
        for its READY=1 on a socket of ours, as systemd would."""
        inner = self.cluster.install.command(["sh", "-c", _PRIVATE_SLURM_DIRS, "login", *argv])
        command = [
            "nsenter",
            f"--net=/var/run/netns/{self.namespace}",
            # The host install has no mount namespace of its own: make one for the login.
            "unshare",
            "--mount",
            "--propagation=private",
            *inner,
        ]
        env = marked(
            self.cluster.root,
            {
                "PATH": os.environ["PATH"],
                "RESOLV_CONF": str(resolv_conf or ""),
                "PASSWD": str(passwd or ""),
                "MUNGE_DIR": str(self.cluster.munge.socket_dir),
                "DEFAULT_MUNGE_DIR": str(DEFAULT_SOCKET_DIR),
            },
        )
        if notify:
            self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            address = self.cluster.root / "run" / f"notify-{self.namespace}.sock"
            self.notify.bind(str(address))
            env["NOTIFY_SOCKET"] = str(address)
        log = open(self.cluster.root / "log" / f"login-{self.namespace}.stdout", "ab")  # noqa: SIM115
        self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        self.cluster.teardown.push(f"login {self.namespace}", self.stop)
        # Every wrapper execs (nsenter without --pid, unshare without --fork, sh, pivot_root, exec):
        # the Popen's pid is the login's process, holding the private /run/slurm.
        wait_for("the login's private /run/slurm", self._private_dirs_mounted, timeout=10)
        if self.notify is not None:
            wait_for(f"{argv[0]} to notify READY=1", self._ready, timeout=30)

    def _ready(self) -> bool:
        assert self.notify is not None
        self.notify.settimeout(1)
        try:
            message = self.notify.recv(4096).decode()
        except TimeoutError:
            return False
        return "READY=1" in message.split("\n")

    def _private_dirs_mounted(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise HarnessError(f"the login process exited; see {self.cluster.root / 'log'}")
        mounts = Path(f"/proc/{self.process.pid}/mounts").read_text()
        return " /run/slurm tmpfs " in mounts

    def path(self, inside: str) -> Path:
        """A path as the login sees it, read from the host."""
        assert self.process is not None
        return Path(f"/proc/{self.process.pid}/root") / inside.lstrip("/")

    def run(self, *args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        """A command on the login, with no SLURM_CONF: it finds its configuration itself."""
        assert self.process is not None
        enter = ["nsenter", f"--target={self.process.pid}", "--mount", "--net", "--root", "--wd"]
        command = self.cluster.install.command(list(args))
        return run(*enter, *command, env={"PATH": os.environ["PATH"]}, check=check, timeout=timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process = None
        if self.notify is not None:
            self.notify.close()
            self.notify = None

"""Accounting's daemons for the session cluster: MariaDB from Debian's package standing in
for the retained database, slurmdbd and slurmrestd from the pinned build. Each is the
suite's own (data directory, socket, ports and logs under the test root), started with
bounded waits and stopped by `Teardown`, like munged in daemons.py."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.integration.host import HarnessError, Teardown, require_free_port, run, wait_for
from tests.integration.runs import marked

MARIADB_PORT = 16306
SLURMDBD_PORT = 16819
SLURMRESTD_PORT = 16820
DB_USER = "slurm"
# The account the suite's unprivileged jobs run in, and its user: system users every Debian
# host has. Not `nobody`: Slurm maps that name to uid 99 (SLURM_AUTH_NOBODY), not Debian's
# 65534, so its association never matches its jobs ("User 65534 not found"). OUTSIDER is in
# no account.
SUITE_ACCOUNT = "team-a"
ACCOUNT_USER = "daemon"
OUTSIDER = "bin"
# The people of the suite's config (users:), made on this host by the nodes' own step
# (tests/integration/people.py), both in SUITE_ACCOUNT.
SUITE_PEOPLE = {"gcsada": 2101, "gcsgrace": 2102}
# slurmrestd refuses to run as root or SlurmUser (the suite's is root): the unprivileged user
# and group its rendered unit runs it as, in place of the head's own system user. Debian's
# nobody is uid 65534; Slurm only refuses its own idea of nobody, 99.
RESTD_USER = "nobody"
RESTD_GROUP = "nogroup"
START_TIMEOUT = 60
# slurmdbd's settings as the cluster's RDS parameter group sets them (lock wait, packet size;
# tests/stacks/test_accounting_stacks.py checks they agree), a 64 MB log for slurmdbd's
# check (RDS keeps its 128 MiB default); the buffer pool stays small on a shared test machine
# (RDS's follows the instance's memory), so slurmdbd logs "Database settings not recommended
# values: innodb_buffer_pool_size" here as it does on a db.t4g.small.
SUITE_DATABASE_SETTINGS = {
    "innodb_buffer_pool_size": "64M",
    "innodb_log_file_size": "64M",
    "innodb_lock_wait_timeout": "900",
    "max_allowed_packet": str(16 * 1024 * 1024),
}


@dataclass
class MariaDb:
    """mariadbd on 127.0.0.1:MARIADB_PORT with its own data directory, as root (the suite's
    files are root's), with a database user for slurmdbd whose password is random per run."""

    root: Path
    teardown: Teardown
    password: str = ""
    process: subprocess.Popen | None = None

    @property
    def home(self) -> Path:
        return database_home(self.root)

    @property
    def socket(self) -> Path:
        return self.home / "mysqld.sock"

    def start(self) -> None:
        for tool in ("mariadbd", "mariadb-install-db", "mariadb"):
            if shutil.which(tool) is None:
                raise HarnessError(
                    f"{tool} is not installed (apt-get install mariadb-server; run: sudo make system)"
                )
        require_free_port(MARIADB_PORT)
        self.home.mkdir(parents=True, exist_ok=True)
        make_tls_files(self.home)
        run(
            "mariadb-install-db",
            "--no-defaults",
            f"--datadir={self.home / 'data'}",
            "--user=root",
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            timeout=120,
        )
        log = open(self.home / "mariadbd.stdout", "ab")  # noqa: SIM115 - kept by Popen
        self.process = subprocess.Popen(
            [
                "mariadbd",
                "--no-defaults",
                f"--datadir={self.home / 'data'}",
                "--user=root",
                f"--socket={self.socket}",
                f"--port={MARIADB_PORT}",
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                # TLS on every TCP connection, as the cluster's RDS parameter group requires
                # (require_secure_transport); slurmdbd checks the server against the CA.
                f"--ssl-ca={database_ca(self.root)}",
                f"--ssl-cert={self.home / 'server.pem'}",
                f"--ssl-key={self.home / 'server.key'}",
                "--require-secure-transport=ON",
                f"--log-error={self.home / 'error.log'}",
                *(f"--{name.replace('_', '-')}={value}" for name, value in SUITE_DATABASE_SETTINGS.items()),
            ],
            env=marked(self.root, dict(os.environ)),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.teardown.push("mariadbd", self.stop)
        wait_for("MariaDB to answer", self._answers, timeout=START_TIMEOUT)
        self.password = secrets.token_urlsafe(24)
        for host in ("127.0.0.1", "localhost"):
            self.sql(f"CREATE USER '{DB_USER}'@'{host}' IDENTIFIED BY '{self.password}'")
            self.sql(f"GRANT ALL ON slurm_acct_db.* TO '{DB_USER}'@'{host}'")

    def sql(self, statement: str) -> str:
        return run(
            "mariadb", "--no-defaults", "-S", str(self.socket), "-u", "root", "-N", "-e", statement
        ).stdout

    def storage_conf(self) -> str:
        """What the head writes at boot from the database's secret (SlurmSite.accounting.storage_conf)."""
        return (
            f"StorageHost=127.0.0.1\nStoragePort={MARIADB_PORT}\nStorageUser={DB_USER}\n"
            f"StoragePass={self.password}\n"
        )

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise HarnessError(f"mariadbd exited {self.process.returncode}; see {self.home / 'error.log'}")
        return (
            self.socket.exists()
            and run(
                "mariadb",
                "--no-defaults",
                "-S",
                str(self.socket),
                "-u",
                "root",
                "-e",
                "SELECT 1",
                check=False,
            ).returncode
            == 0
        )

    def stop(self) -> None:
        stop_process(self.process, "mariadbd", timeout=60)
        self.process = None


def database_home(root: Path) -> Path:
    return root / "mariadb"


def database_ca(root: Path) -> Path:
    """The CA that signed the suite's database server certificate (the cluster's: RDS's bundle)."""
    return database_home(root) / "ca.pem"


def make_tls_files(home: Path) -> None:
    """A throw-away CA and a server certificate for 127.0.0.1 that it signed."""

    def openssl(*args: str) -> None:
        run("openssl", *args, timeout=60)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=gpucluster suite CA",
            "-keyout", str(home / "ca.key"), "-out", str(home / "ca.pem"))  # fmt: skip
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", str(home / "server.key"), "-out", str(home / "server.csr"))  # fmt: skip
    (home / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    openssl("x509", "-req", "-days", "2", "-in", str(home / "server.csr"), "-CA", str(home / "ca.pem"),
            "-CAkey", str(home / "ca.key"), "-CAcreateserial", "-out", str(home / "server.pem"),
            "-extfile", str(home / "server.ext"))  # fmt: skip


def stop_process(process: subprocess.Popen | None, what: str, timeout: float) -> None:
    """SIGTERM, a bounded wait, then SIGKILL."""
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
        raise HarnessError(f"{what} ignored SIGTERM for {timeout:.0f} s and was killed") from None


@dataclass
class Daemon:
    """A Slurm daemon run in the foreground (`-D`) with its output in the test's log directory."""

    name: str
    argv: list[str]
    log: Path
    env: dict[str, str]
    answers: Callable[[], bool]
    # Who it runs as (a unit's User= and Group=, no supplementary groups); None: the suite's root.
    uid: int | None = None
    gid: int | None = None
    process: subprocess.Popen | None = None

    def start(self) -> None:
        as_user: dict = {} if self.uid is None else {"user": self.uid, "group": self.gid, "extra_groups": []}
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                self.argv, env=self.env, stdout=log, stderr=subprocess.STDOUT, **as_user
            )
        wait_for(f"{self.name} to answer", self._probe, timeout=START_TIMEOUT)

    def _probe(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise HarnessError(f"{self.name} exited {self.process.returncode}; see {self.log}")
        return self.answers()

    def stop(self) -> None:
        stop_process(self.process, self.name, timeout=30)
        self.process = None


def write_secret_file(path: Path, content: bytes) -> None:
    """Mode 600 from the start, as the head writes the storage file and the JWT key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as file:
        file.write(content)

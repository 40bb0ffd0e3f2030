"""The rendered metadata guard in a real kernel. A network namespace stands in for the node and
another for IMDS (the metadata address, a small HTTP server there), joined by a veth pair as a
node is to its metadata service by its interface; the very script every node runs
(gpucluster.bootstrap.metadata_guard) lets root through and refuses an unprivileged user, and
a container's root, which is that user outside. Needs root and iptables (.ci/debian-packages):
skipped without them, failed in CI."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpucluster.bootstrap import metadata_guard
from gpucluster.resolved import resolve
from tests.bootstrap_runs import example
from tests.integration.prerequisites import unavailable

NETNS_PREFIX = "gcimds-"
ADDRESS = metadata_guard.METADATA_ADDRESS.split("/")[0]
TOKEN_URL = f"http://{ADDRESS}/latest/api/token"
NOBODY = "65534"
# curl's exit status when the connection is refused (curl(1), EXIT CODES).
COULD_NOT_CONNECT = 7
# The node's address and the metadata service's on their link.
NODE_ADDRESS = "10.254.0.2/24"
IMDS_LINK_ADDRESS = "10.254.0.1/24"
# Answers IMDSv2's token request.
SERVER = f"""
import http.server

class Metadata(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        body = b"metadata-token"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

http.server.HTTPServer(("{ADDRESS}", 80), Metadata).serve_forever()
"""
_names = itertools.count()


@dataclass(frozen=True)
class Namespace:
    name: str

    def run(self, *argv: str, uid: str | None = None) -> subprocess.CompletedProcess[str]:
        """`argv` inside the namespace, as root or as `uid` with no groups."""
        as_user = [] if uid is None else ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        return subprocess.run(
            ["nsenter", f"--net=/var/run/netns/{self.name}", *as_user, *argv],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def token(self, *wrap: str, uid: str | None = None) -> subprocess.CompletedProcess[str]:
        """IMDSv2's first request, from `uid` (through `wrap`, a command that runs the rest)."""
        curl = ["curl", "-sS", "--max-time", "10", "-X", "PUT", TOKEN_URL]
        return self.run(*wrap, *curl, "-H", "X-aws-ec2-metadata-token-ttl-seconds: 300", uid=uid)

    def rules(self) -> list[str]:
        return self.run("iptables", "-w", "10", "-S").stdout.splitlines()


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (a network namespace, iptables)"
    for tool, package in (
        ("iptables", "iptables"),
        ("iptables-restore", "iptables"),
        ("ip", "iproute2"),
        ("nsenter", "util-linux"),
        ("setpriv", "util-linux"),
        ("curl", "curl"),
    ):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install {package})"
    return None


def _in(name: str, *argv: str) -> None:
    done = subprocess.run(["ip", "-n", name, *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"ip -n {name} {' '.join(argv)}: {done.stderr}"


@pytest.fixture
def namespace() -> Iterator[Namespace]:
    """The node's namespace, linked to the metadata service's, whose stand-in listens on the
    metadata address; the server and both namespaces go at teardown, whatever the test did."""
    missing = _missing()
    if missing is not None:
        unavailable("run the metadata guard in a kernel", missing)
    base = f"{NETNS_PREFIX}{os.getpid()}-{next(_names)}"
    node, imds = Namespace(f"{base}-node"), Namespace(f"{base}-imds")
    made: list[str] = []
    server = None
    try:
        for space in (node, imds):
            done = subprocess.run(
                ["ip", "netns", "add", space.name], capture_output=True, text=True, check=False
            )
            if done.returncode != 0:
                unavailable("run the metadata guard in a kernel", f"ip netns add: {done.stderr.strip()}")
            made.append(space.name)
        _in(node.name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns", imds.name)
        for space, address in ((node, NODE_ADDRESS), (imds, IMDS_LINK_ADDRESS)):
            _in(space.name, "addr", "add", address, "dev", "eth0")
            _in(space.name, "link", "set", "eth0", "up")
            _in(space.name, "link", "set", "lo", "up")
        _in(imds.name, "addr", "add", f"{ADDRESS}/32", "dev", "lo")
        _in(node.name, "route", "add", f"{ADDRESS}/32", "via", IMDS_LINK_ADDRESS.split("/")[0])
        server = subprocess.Popen(
            ["nsenter", f"--net=/var/run/netns/{imds.name}", sys.executable, "-c", SERVER],
            stderr=subprocess.PIPE,
            text=True,
        )
        wait = "for _ in $(seq 100); do curl -s -o /dev/null -X PUT $0 && exit 0; sleep 0.1; done; exit 1"
        assert node.run("bash", "-c", wait, TOKEN_URL).returncode == 0, "the metadata stand-in never answered"
        yield node
    finally:
        if server is not None:
            server.kill()
            server.communicate(timeout=10)
        for name in made:
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


@pytest.fixture
def guard(tmp_path: Path) -> Path:
    """The guard script exactly as every role's bundle carries it."""
    script = tmp_path / "gpucluster-imds-guard"
    script.write_text(metadata_guard.guard_files(resolve(example("default")))[metadata_guard.SCRIPT])
    script.chmod(0o755)
    return script


def _jump() -> str:
    return f"-A OUTPUT -d {metadata_guard.METADATA_ADDRESS} -j {metadata_guard.CHAIN}"


def test_only_root_reaches_metadata_once_the_guard_ran(namespace: Namespace, guard: Path) -> None:
    # Without the guard, anyone on the node gets a token (and so the role's credentials).
    assert namespace.token(uid=NOBODY).stdout == "metadata-token"
    done = namespace.run(str(guard))
    assert done.returncode == 0, done.stderr
    root = namespace.token()
    assert (root.returncode, root.stdout) == (0, "metadata-token"), root.stderr
    nobody = namespace.token(uid=NOBODY)
    assert nobody.returncode == COULD_NOT_CONNECT, (nobody.returncode, nobody.stdout, nobody.stderr)
    assert "metadata-token" not in nobody.stdout


def test_running_the_guard_again_leaves_one_rule_of_each(namespace: Namespace, guard: Path) -> None:
    for _ in range(3):
        done = namespace.run(str(guard))
        assert done.returncode == 0, done.stderr
    chain = metadata_guard.CHAIN
    assert [rule for rule in namespace.rules() if "OUTPUT" in rule or chain in rule] == [
        "-P OUTPUT ACCEPT",
        f"-N {chain}",
        _jump(),
        f"-A {chain} -m owner --uid-owner 0 -j RETURN",
        f"-A {chain} -j REJECT --reject-with icmp-port-unreachable",
    ]
    assert namespace.token().returncode == 0


def test_the_guard_goes_first_in_output_ahead_of_an_accepting_rule(namespace: Namespace, guard: Path) -> None:
    """A rule already in OUTPUT that accepts the address (an administrator's, a firewall's)
    does not open metadata to users."""
    accept = namespace.run("iptables", "-w", "10", "-A", "OUTPUT", "-d", ADDRESS, "-j", "ACCEPT")
    assert accept.returncode == 0, accept.stderr
    assert namespace.run(str(guard)).returncode == 0
    output = [rule for rule in namespace.rules() if rule.startswith("-A OUTPUT")]
    assert output[0] == _jump()
    assert namespace.token(uid=NOBODY).returncode == COULD_NOT_CONNECT


def test_a_containers_root_is_the_user_outside_and_refused(namespace: Namespace, guard: Path) -> None:
    """Enroot runs a user's container in a user namespace, in the node's network namespace:
    uid 0 inside is the user's uid to the kernel, which the owner rule matches."""
    inside = ["unshare", "--user", "--map-root-user"]
    probe = namespace.run(*inside, "id", "-u", uid=NOBODY)
    if probe.returncode != 0:
        pytest.skip(f"this kernel refuses unprivileged user namespaces: {probe.stderr.strip()}")
    assert probe.stdout.strip() == "0"
    assert namespace.run(str(guard)).returncode == 0
    refused = namespace.token(*inside, uid=NOBODY)
    assert refused.returncode == COULD_NOT_CONNECT, (refused.returncode, refused.stderr)

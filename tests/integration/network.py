"""The suite's network: a bridge on the host holding the controller's address, and one
network namespace per compute node joined to it by a veth pair (10.213.0.0/24)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from tests.integration.host import Teardown, kill_pid, run, wait_for

SUBNET = ipaddress.IPv4Network("10.213.0.0/24")
CONTROLLER_IP = "10.213.0.1"
BRIDGE = "gcslurm0"
NETNS_PREFIX = "gcslurm-"


def write_named_hosts(path: Path) -> Path:
    """This machine's /etc/hosts and a name for every suite address, for the daemons' own
    /etc/hosts (`with_hosts`). Slurm's connection manager names each connection it accepts by
    a reverse lookup (conmgr's _resolve_fd, getnameinfo; a failure is not cached). The suite's
    addresses have no PTR record, as a VPC's addresses have, and this machine's resolver let
    such a query run into its 5 s timeout: one test in two waited 5 s on an RPC."""
    names = [f"{address} {NETNS_PREFIX}{str(address).replace('.', '-')}" for address in SUBNET.hosts()]
    path.write_text("\n".join([Path("/etc/hosts").read_text().rstrip("\n"), *names]) + "\n")
    return path


def with_hosts(hosts: Path, argv: list[str]) -> list[str]:
    """`argv` in a mount namespace of its own where `hosts` is /etc/hosts; every wrapper execs,
    so the process started is the daemon itself."""
    script = 'mount --bind "$0" /etc/hosts && exec "$@"'
    return ["unshare", "--mount", "--propagation=private", "sh", "-c", script, str(hosts), *argv]


def netns_pids(name: str) -> list[int]:
    result = run("ip", "netns", "pids", name, check=False)
    return [int(pid) for pid in result.stdout.split()]


@dataclass
class Network:
    """A bridge on the host holding the controller's address, one namespace per node."""

    teardown: Teardown
    namespaces: list[str] = field(default_factory=list)

    def create(self) -> None:
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
        self.teardown.push(f"route to {address}", lambda: self.reconnect(address))
        run("ip", "link", "add", host_side, "type", "veth", "peer", "name", "eth0", "netns", name)
        run("ip", "link", "set", host_side, "master", BRIDGE, "up")
        run("ip", "-n", name, "addr", "add", f"{address}/{SUBNET.prefixlen}", "dev", "eth0")
        run("ip", "-n", name, "link", "set", "eth0", "up")
        run("ip", "-n", name, "link", "set", "lo", "up")
        self.namespaces.append(name)
        return name, address

    def cut_off(self, address: str) -> None:
        """The host's connects to `address` fail at once with EHOSTUNREACH, as to an instance
        that is gone. A refused connect would be retried: Slurm reconnects to a slurmd once a
        second for up to MessageTimeout (slurm_send_addr_recv_msgs), so each RPC slurmctld
        sends to a killed node (health check, then ping) took 10 s before it could go DOWN."""
        run("ip", "route", "replace", "unreachable", f"{address}/32")

    def reconnect(self, address: str) -> None:
        run("ip", "route", "del", "unreachable", f"{address}/32", check=False)

    def _delete_namespace(self, name: str, host_side: str) -> None:
        def emptied() -> bool:
            pids = netns_pids(name)
            for pid in pids:
                kill_pid(pid)
            return not pids

        wait_for(f"every process in {name} to die", emptied, timeout=10)
        run("ip", "link", "del", host_side, check=False)
        run("ip", "netns", "del", name, check=False)

    def remove_leftovers(self) -> list[str]:
        """A previous run killed before its teardown leaves our names behind: reclaim them
        (before `create`, holding the machine lock). Returns what was there."""
        found = leftovers()
        for name in _namespaces():
            index = name.removeprefix(f"{NETNS_PREFIX}n")
            self._delete_namespace(name, f"gcs-n{index}")
        run("ip", "link", "del", BRIDGE, check=False)
        for address in _unreachable():
            self.reconnect(address)
        return found


def _namespaces() -> list[str]:
    names = (line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.split())
    return [name for name in names if name.startswith(NETNS_PREFIX)]


def _unreachable() -> list[str]:
    """The suite's addresses that a killed node's route still cuts off."""
    routes = (line.split() for line in run("ip", "route", "show", "type", "unreachable").stdout.splitlines())
    return [route[1] for route in routes if ipaddress.ip_network(route[1]).subnet_of(SUBNET)]


def leftovers() -> list[str]:
    """What of the suite's network still exists (checked after teardown)."""
    found = [f"network namespace {name}" for name in _namespaces()]
    found += [f"unreachable route to {address}" for address in _unreachable()]
    if run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        found.append(f"bridge {BRIDGE}")
    return found

"""The suite's network: a bridge on the host holding the controller's address, and one
network namespace per compute node joined to it by a veth pair (10.213.0.0/24)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from tests.integration.host import Teardown, kill_pid, run, wait_for

SUBNET = ipaddress.IPv4Network("10.213.0.0/24")
CONTROLLER_IP = "10.213.0.1"
BRIDGE = "gcslurm0"
NETNS_PREFIX = "gcslurm-"


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
        return found


def _namespaces() -> list[str]:
    names = (line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines() if line.split())
    return [name for name in names if name.startswith(NETNS_PREFIX)]


def leftovers() -> list[str]:
    """What of the suite's network still exists (checked after teardown)."""
    found = [f"network namespace {name}" for name in _namespaces()]
    if run("ip", "link", "show", BRIDGE, check=False).returncode == 0:
        found.append(f"bridge {BRIDGE}")
    return found

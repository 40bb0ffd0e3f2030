"""What NCCL's own lines (NCCL_DEBUG=INFO) say: network per host, EFA NIC count, version, ranks.

The lines differ by version, so each fact has the few spellings seen in real logs:
  aws-ofi-nccl 1.x:  `NET/OFI Selected Provider is efa (found 4 nics)`
  aws-ofi-nccl 1.1x: `NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)`
  NCCL:              `Using network AWS Libfabric` | `Using network Socket` | `Using network IB`
NCCL can try a network and give it up (`NET/IB : Using [RO]` then `Failed to initialize
NET plugin IB`), so the network a host uses is its `Using network` line, not the first
NET/ line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpucluster.gate.model import NetworkKind, NetworkSeen

# host:pid:tid [cudaDev] NCCL INFO ...
_PREFIX = re.compile(r"^\s*(\S+?):\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)\b")
_USING_NETWORK = re.compile(r"NCCL INFO Using network (\S.*?)\s*$")
_PROVIDER = re.compile(r"NET/OFI Selected [Pp]rovider is ([^\s,(]+)(?:, fabric is ([^\s,(]+))?")
_NICS = re.compile(r"\(found (\d{1,18}) nics?\)")
_SOCKET = re.compile(r"NET/Socket : Using \[\d+\]")
_VERSION = re.compile(r"\bNCCL version (\d+\.\d+\.\d+)")
_NRANKS = re.compile(r"\bn[Rr]anks (\d{1,18})\b")
_NNODES = re.compile(r"\bnNodes (\d{1,18})\b")
UNKNOWN_HOST = "?"


def network_kind(name: str) -> NetworkKind:
    lowered = name.lower()
    if "libfabric" in lowered or "ofi" in lowered:
        return "ofi-other"
    if lowered == "socket":
        return "socket"
    if lowered.startswith("ib"):
        return "ib"
    return "other"


@dataclass
class _Host:
    # Its `Using network` line, else the first of its lines that said anything below.
    line: int
    network: str | None = None
    provider: str | None = None
    fabric: str | None = None
    nics: int | None = None
    socket_line: int | None = None


@dataclass
class NcclInfo:
    """Facts gathered line by line; `feed` every line of one run."""

    version: str | None = None
    nranks: int | None = None
    nnodes: int | None = None
    _hosts: dict[str, _Host] = field(default_factory=dict)

    def feed(self, number: int, line: str) -> bool:
        """Take what `line` says; True when it was one of NCCL's own lines."""
        # Each pattern is searched only where its words are: a log of hundreds of MB is
        # mostly INFO lines that say none of these things (bench/run.py measures it).
        version = _VERSION.search(line) if "NCCL version" in line else None
        if version and self.version is None:
            self.version = version.group(1)
        if "NCCL INFO" not in line and "NCCL WARN" not in line:
            return version is not None
        self._ranks(line)
        using = _USING_NETWORK.search(line) if "Using network" in line else None
        provider = _PROVIDER.search(line) if "Selected" in line else None
        nics = _NICS.search(line) if "nic" in line else None
        socket = "NET/Socket" in line and _SOCKET.search(line) is not None
        if not (using or provider or nics or socket):
            return True
        host = self._host(line, number)
        if using:
            host.network = using.group(1)
            host.line = number
        if provider:
            host.provider, host.fabric = provider.group(1), provider.group(2)
        if nics:
            host.nics = int(nics.group(1))
        if socket and host.socket_line is None:
            host.socket_line = number
        return True

    def _host(self, line: str, number: int) -> _Host:
        prefix = _PREFIX.match(line)
        name = prefix.group(1) if prefix else UNKNOWN_HOST
        host = self._hosts.get(name)
        if host is None:
            host = self._hosts[name] = _Host(line=number)
        return host

    def _ranks(self, line: str) -> None:
        if self.nranks is None and "anks " in line and (ranks := _NRANKS.search(line)):
            self.nranks = int(ranks.group(1))
        if self.nnodes is None and "nNodes " in line and (nodes := _NNODES.search(line)):
            self.nnodes = int(nodes.group(1))

    def networks(self) -> tuple[NetworkSeen, ...]:
        return tuple(
            seen for name, host in sorted(self._hosts.items()) if (seen := _seen(name, host)) is not None
        )


def _seen(name: str, host: _Host) -> NetworkSeen | None:
    if host.network is not None:
        kind = network_kind(host.network)
        detail = host.network
    elif host.provider is not None:
        # Older NCCL printed the provider but no `Using network` line.
        kind, detail = "ofi-other", "Libfabric"
    elif host.socket_line is not None:
        return NetworkSeen(host=name, kind="socket", detail="Socket", line=host.socket_line)
    else:
        return None
    if kind == "ofi-other" and host.provider is not None:
        fabric = f", fabric {host.fabric}" if host.fabric else ""
        detail = f"{detail} (provider {host.provider}{fabric})"
        if host.provider == "efa":
            kind = "efa"
    return NetworkSeen(host=name, kind=kind, detail=detail, efa_nics=host.nics, line=host.line)

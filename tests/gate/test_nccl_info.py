"""The network each host's NCCL uses, read from NCCL INFO lines of several versions."""

from __future__ import annotations

import pytest

from gpucluster.gate.nccl_info import NcclInfo


def networks(*lines: str) -> list[tuple[str, str, int | None]]:
    info = NcclInfo()
    for number, line in enumerate(lines, start=1):
        info.feed(number, line)
    return [(seen.host, seen.kind, seen.efa_nics) for seen in info.networks()]


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [
                "p5:1:1 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 32 nics)",
                "p5:1:1 [0] NCCL INFO Using network Libfabric",
            ],
            [("p5", "efa", 32)],
        ),
        (
            [
                "w-0:25:25 [0] NCCL INFO NET/OFI Selected Provider is efa",
                "w-0:25:25 [0] NCCL INFO Using network AWS Libfabric",
            ],
            [("w-0", "efa", None)],
        ),
        (
            [
                "p3:7:7 [0] NCCL INFO NET/OFI Selected Provider is tcp;ofi_rxm",
                "p3:7:7 [0] NCCL INFO Using network AWS Libfabric",
            ],
            [("p3", "ofi-other", None)],
        ),
        (
            [
                "vm:1:1 [0] NCCL INFO NET/IB : No device found.",
                "vm:1:1 [0] NCCL INFO NET/IB : Using [RO]; OOB eth0:192.0.2.2<0>",
                "vm:1:1 [0] NCCL INFO Failed to initialize NET plugin IB",
                "vm:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:192.0.2.2<0>",
                "vm:1:1 [0] NCCL INFO Using network Socket",
            ],
            [("vm", "socket", None)],
        ),
        (["dgx:3:3 [0] NCCL INFO Using network IB"], [("dgx", "ib", None)]),
        # An old NCCL that names the socket interface but prints no `Using network` line.
        (["n1:3:3 [0] NCCL INFO NET/Socket : Using [0]ens5:10.0.0.1<0>"], [("n1", "socket", None)]),
        # A plugin that gave up: efa was selected, then NCCL fell back to sockets.
        (
            [
                "n2:3:3 [0] NCCL INFO NET/OFI Selected provider is efa (found 4 nics)",
                "n2:3:3 [0] NCCL INFO Using network Socket",
            ],
            [("n2", "socket", 4)],
        ),
        (["n3:3:3 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.3<0>"], []),
    ],
    ids=["efa-new", "efa-old", "ofi-tcp", "ib-then-socket", "ib", "socket-old", "efa-then-socket", "none"],
)
def test_network_per_host(lines, expected):
    assert networks(*lines) == expected


def test_version_and_rank_counts_from_info_lines():
    info = NcclInfo()
    info.feed(1, "vm:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0")
    info.feed(2, "vm:1:1 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0")
    assert (info.version, info.nranks, info.nnodes) == ("2.28.9", 16, 2)
    # mpirun's first rank prints the version without the INFO prefix.
    plain = NcclInfo()
    assert plain.feed(1, "NCCL version 2.12.7+cuda11.4") is True
    assert plain.version == "2.12.7"

"""What one nccl-tests run says, as read from its text log or its `-J` JSON file.

Only facts from the log live here; judging them is gpucluster.gate.decide's job.
Each fact keeps the line it came from (1-based, in the file as given) so a report
can point the user at it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from gpucluster.job_output import EfaCheck, PairHeader

# How a run's collective, ranks or nodes became known: printed by nccl-tests, taken
# from the log's file name, or worked out from the numbers (busbw/algbw, ranks/GPUs).
Origin = Literal["log", "json", "file name", "derived"]
# The network NCCL said it uses ("Using network ..."), with aws-ofi-nccl's provider.
NetworkKind = Literal["efa", "ofi-other", "socket", "ib", "other"]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Measure(Frozen):
    """One half (out-of-place or in-place) of a result row."""

    time_us: float | None
    algbw_gbps: float | None
    busbw_gbps: float | None
    # `#wrong` (nccl-tests >= 2.10): how many values were wrong; None where "N/A".
    wrong: int | None = None
    # `error` (older nccl-tests): the largest deviation, not a count (see INDEX.md).
    max_error: float | None = None


class SizeRow(Frozen):
    size_bytes: int
    count: int | None
    dtype: str | None
    redop: str | None
    out_of_place: Measure
    in_place: Measure
    line: int


class NetworkSeen(Frozen):
    """One host's NCCL INFO lines about the network it uses."""

    host: str
    kind: NetworkKind
    detail: str
    efa_nics: int | None = None
    line: int


class Failure(Frozen):
    """A line where nccl-tests or NCCL said the test itself failed."""

    line: int
    text: str


class Count(Frozen):
    """A rank or node count and how it became known."""

    value: int
    origin: Origin


class Versions(Frozen):
    nccl: str | None = None
    nccl_tests: str | None = None


class Sweep(Frozen):
    """The sizes the run was asked for: `maxBytes` and `step: 2(factor)` or `step: N(bytes)`."""

    max_bytes: int | None = None
    step_factor: int | None = None
    step_bytes: int | None = None
    # Set when nccl-tests lowered maxBytes to what GPU memory holds (A100 40 GB, A10G, L4,
    # L40S under -e 16G): the header's maxBytes, while max_bytes is the lowered one.
    asked_max_bytes: int | None = None

    def after(self, size: int) -> int:
        """The size the sweep runs after `size`: nccl-tests steps by -i bytes or by -f factor,
        so the last size is often below maxBytes (8 B x 4^k stops at 128 MiB under 256 MiB)."""
        if self.step_bytes:
            return size + self.step_bytes
        factor = self.step_factor if self.step_factor and self.step_factor > 1 else 2
        return max(size, 1) * factor


class Summary(Frozen):
    """The lines nccl-tests prints after the table; `line` None: the run never got there."""

    out_of_bounds: int | None = None
    out_of_bounds_line: int | None = None
    avg_busbw_gbps: float | None = None
    line: int | None = None


class NcclRun(Frozen):
    """One collective's sweep of message sizes, as far as the log shows it."""

    source: str
    first_line: int
    kind: Literal["text", "json"]
    collective: str | None = None
    collective_from: Origin | None = None
    versions: Versions = Versions()
    ranks: Count | None = None
    nodes: Count | None = None
    hosts: tuple[str, ...] = ()
    gpu_model: str | None = None
    sweep: Sweep = Sweep()
    wrong_column: Literal["#wrong", "error"] | None = None
    rows: tuple[SizeRow, ...] = ()
    networks: tuple[NetworkSeen, ...] = ()
    summary: Summary = Summary()
    cut_row_line: int | None = None
    failures: tuple[Failure, ...] = ()
    # The pairwise job's first line (gpucluster.job_output): round and the two nodes.
    pair: PairHeader | None = None

    @property
    def label(self) -> str:
        name = self.collective or "unknown collective"
        return f"{self.source}:{self.first_line} {name}"


class NodeCheck(Frozen):
    """One node's efa-check line (gpucluster.job_output) and where it stands."""

    line: int
    result: EfaCheck

    @property
    def own_failed(self) -> bool:
        """The node's own checks (GPUs, EFA devices): a fault of this node whatever its partner."""
        result = self.result
        return not result.ok or result.efa_devices < result.expected_efa_devices

    @property
    def failed(self) -> bool:
        return self.own_failed or bool(self.result.pingpong_failed_with)

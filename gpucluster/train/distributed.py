"""Who this process is (torchrun's environment) and the few collectives the loop needs.

Under torchrun every process gets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT; the process group is initialized from them (env://). Without torchrun
the trainer runs as world size 1 with no process group at all. NCCL on a GPU
(one device per LOCAL_RANK), gloo on CPU.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from gpucluster.bad_input import BadInput

TORCHRUN_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
SOURCE = "(environment)"


@dataclass(frozen=True)
class DistContext:
    rank: int
    local_rank: int
    world_size: int
    device: torch.device
    # False for a plain `python -m gpucluster.train`: no process group, no DDP wrapper.
    distributed: bool

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def any_rank(self, flag: bool) -> bool:
        """True on every rank when it is true on one (a signal reaches ranks at different steps)."""
        if not self.distributed:
            return flag
        value = torch.tensor([1 if flag else 0], dtype=torch.int32, device=self.device)
        dist.all_reduce(value, op=dist.ReduceOp.MAX)
        return bool(value.item())

    def barrier(self) -> None:
        if self.distributed:
            dist.barrier()

    def gather_to_all(self, item: Any) -> list[Any]:
        """Every rank's `item`, indexed by rank (small picklable objects only)."""
        if not self.distributed:
            return [item]
        items: list[Any] = [None] * self.world_size
        dist.all_gather_object(items, item)
        return items

    def from_main(self, item: Any) -> Any:
        """Rank 0's `item` on every rank."""
        if not self.distributed:
            return item
        box = [item if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def _int_var(env: Mapping[str, str], name: str) -> int:
    try:
        value = int(env[name])
    except ValueError:
        raise BadInput(SOURCE, name, f"{env[name]!r} is not an integer", "launch with torchrun") from None
    if value < 0:
        raise BadInput(SOURCE, name, f"{value} is negative", "launch with torchrun")
    return value


def _device(local_rank: int) -> torch.device:
    if not torch.cuda.is_available():
        return torch.device("cpu")
    count = torch.cuda.device_count()
    if local_rank >= count:
        raise BadInput(
            SOURCE,
            "LOCAL_RANK",
            f"{local_rank} but this node shows {count} GPU(s)",
            "set torchrun's --nproc-per-node to the GPUs of one node and give each launcher all of them",
        )
    torch.cuda.set_device(local_rank)
    return torch.device("cuda", local_rank)


def setup(env: Mapping[str, str] | None = None) -> DistContext:
    """Initialize from torchrun's variables, or a single process when none is set."""
    env = os.environ if env is None else env
    present = [name for name in TORCHRUN_VARS if name in env]
    if not present:
        return DistContext(rank=0, local_rank=0, world_size=1, device=_device(0), distributed=False)
    missing = [name for name in TORCHRUN_VARS if name not in env]
    if missing:
        raise BadInput(
            SOURCE,
            missing[0],
            f"is unset while {present[0]} is set",
            "launch with torchrun, which sets all five",
        )
    rank, local_rank, world_size = (_int_var(env, name) for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"))
    if not rank < world_size:
        raise BadInput(SOURCE, "RANK", f"{rank} is not below WORLD_SIZE={world_size}", "launch with torchrun")
    device = _device(local_rank)
    backend = "nccl" if device.type == "cuda" else "gloo"
    if not dist.is_initialized():
        dist.init_process_group(
            backend=backend,
            rank=rank,
            world_size=world_size,
            device_id=device if device.type == "cuda" else None,
        )
    return DistContext(
        rank=rank, local_rank=local_rank, world_size=world_size, device=device, distributed=True
    )


def teardown(ctx: DistContext) -> None:
    if ctx.distributed and dist.is_initialized():
        dist.destroy_process_group()

"""RNG states and the weights fingerprint: what makes a resumed run bit-identical.

Each rank has its own generators (dropout draws differ per rank), so a checkpoint
holds every rank's states, gathered to rank 0. Only types torch.load accepts with
weights_only=True are stored (tensors, ints, tuples, lists), so loading a checkpoint
never unpickles arbitrary objects.
"""

from __future__ import annotations

import hashlib
import random
import sys
from typing import Any

import torch


def capture_rng(device: torch.device) -> dict[str, Any]:
    """This process's python, numpy (only if the task imported it), torch CPU and CUDA states."""
    state: dict[str, Any] = {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
        "numpy": None,
    }
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kind, keys, position, has_gauss, cached = numpy.random.get_state()
        state["numpy"] = (kind, torch.from_numpy(keys.copy()), position, has_gauss, cached)
    return state


def restore_rng(state: dict[str, Any], device: torch.device) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and device.type == "cuda":
        torch.cuda.set_rng_state(state["cuda"], device)
    numpy = sys.modules.get("numpy")
    if state["numpy"] is not None and numpy is not None:
        kind, keys, position, has_gauss, cached = state["numpy"]
        numpy.random.set_state((kind, keys.numpy(), position, has_gauss, cached))


def weights_sha256(model: torch.nn.Module) -> str:
    """sha256 over the state_dict in a canonical form.

    For each entry, in sorted key order: the key (UTF-8), its dtype and shape as
    text, then the tensor's bytes, contiguous, in CPU (little-endian) layout. Equal
    digests mean equal weights bit for bit, independent of device and of how the
    tensors happen to be strided.
    """
    digest = hashlib.sha256()
    for key, tensor in sorted(model.state_dict().items()):
        flat = tensor.detach().to("cpu").contiguous().clone().reshape(-1)
        digest.update(f"{key}\0{flat.dtype}\0{tuple(tensor.shape)}\0".encode())
        digest.update(bytes(flat.view(torch.uint8).untyped_storage()))
    return digest.hexdigest()

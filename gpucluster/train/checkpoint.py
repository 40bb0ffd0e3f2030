"""Checkpoints that survive a crash at any instant and never leave a run without one.

Layout in --checkpoint-dir (shared by all nodes, e.g. on FSx):
    step-00000120.pt     torch.save of the whole training state
    step-00000120.json   its manifest: step, file, size, sha256 (written last)

Protocol (rank 0 only; other ranks never write here):
 1. serialize, hash, write to a hidden temporary file in the same directory, fsync;
 2. rename onto step-N.pt (atomic on one filesystem), then the manifest the same way,
    then fsync the directory so the renames themselves are durable;
 3. read the file back and compare size and sha256 with the manifest;
 4. only then delete older checkpoints and stale temporary files.
A crash before step 2 leaves a temporary file that nothing reads; a crash before 4
leaves two good checkpoints. Resume takes the newest whose manifest parses and whose
file matches it, and says which corrupt ones it skipped.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, ValidationError

FORMAT = 1
_MANIFEST = re.compile(r"^step-(\d{8})\.json$")
_TEMP_PREFIX = ".tmp-"


class CheckpointError(RuntimeError):
    """A checkpoint just written does not read back as written."""


class Manifest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    format: int
    step: int
    total_steps: int
    world_size: int
    file: str
    size: int
    sha256: str
    weights_sha256: str


def _log(message: str) -> None:
    print(f"gpucluster-train: {message}", file=sys.stderr, flush=True)


def stem(step: int) -> str:
    return f"step-{step:08d}"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes | memoryview) -> None:
    """Write to a temporary sibling, fsync, rename onto `path`: readers see old or new, never half."""
    temporary = path.with_name(f"{_TEMP_PREFIX}{os.getpid()}-{path.name}")
    try:
        with open(temporary, "wb") as output:
            output.write(data)
            output.flush()
            os.fsync(output.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()


def _sha256_file(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def verify(directory: Path, manifest: Manifest) -> str | None:
    """None when the file matches its manifest, else why not."""
    path = directory / manifest.file
    if manifest.format != FORMAT:
        return f"format {manifest.format}, this trainer reads {FORMAT}"
    if not path.is_file():
        return f"{manifest.file} is missing"
    size, digest = _sha256_file(path)
    if size != manifest.size:
        return f"{manifest.file} has {size} bytes, manifest says {manifest.size}"
    if digest != manifest.sha256:
        return (
            f"{manifest.file} sha256 {digest[:12]}... differs from the manifest's {manifest.sha256[:12]}..."
        )
    return None


def save(
    directory: Path,
    state: dict[str, Any],
    *,
    step: int,
    total_steps: int,
    world_size: int,
    weights_sha256: str,
) -> Manifest:
    """Steps 1-4 above; raises CheckpointError (keeping the older checkpoints) if read-back fails."""
    directory.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    # Whole state in memory once: the hash is of exactly the bytes handed to the file.
    torch.save(state, buffer)
    data = buffer.getbuffer()
    name = stem(step)
    manifest = Manifest(
        format=FORMAT,
        step=step,
        total_steps=total_steps,
        world_size=world_size,
        file=f"{name}.pt",
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        weights_sha256=weights_sha256,
    )
    write_atomic(directory / manifest.file, data)
    write_atomic(directory / f"{name}.json", (manifest.model_dump_json(indent=2) + "\n").encode())
    _fsync_dir(directory)
    problem = verify(directory, manifest)
    if problem is not None:
        raise CheckpointError(f"checkpoint {directory / manifest.file} failed read-back: {problem}")
    _prune(directory, keep=name)
    return manifest


def _prune(directory: Path, keep: str) -> None:
    """Remove every other checkpoint and stale temporary file, manifest first (it marks validity)."""
    for entry in sorted(directory.iterdir()):
        if entry.name.startswith(_TEMP_PREFIX):
            entry.unlink(missing_ok=True)
    for manifest_path in sorted(directory.glob("step-*.json")):
        if manifest_path.stem != keep:
            manifest_path.unlink(missing_ok=True)
            manifest_path.with_suffix(".pt").unlink(missing_ok=True)
    for orphan in sorted(directory.glob("step-*.pt")):
        if orphan.stem != keep:
            orphan.unlink(missing_ok=True)


def _manifests(directory: Path) -> Iterator[tuple[int, Path]]:
    if not directory.is_dir():
        return
    found = [(int(m.group(1)), entry) for entry in directory.iterdir() if (m := _MANIFEST.match(entry.name))]
    yield from sorted(found, reverse=True)


def newest_verified(directory: Path) -> Manifest | None:
    """The newest checkpoint whose manifest parses and whose file matches it; logs each one skipped."""
    for _, path in _manifests(directory):
        try:
            manifest = Manifest.model_validate(json.loads(path.read_text()))
        except (OSError, ValueError, ValidationError) as exc:
            _log(f"skipping checkpoint {path}: unreadable manifest ({type(exc).__name__})")
            continue
        problem = verify(directory, manifest)
        if problem is None:
            return manifest
        _log(f"skipping checkpoint {path}: {problem}")
    return None


def load(directory: Path, manifest: Manifest) -> dict[str, Any]:
    """The state of a verified checkpoint, tensors on CPU; weights_only refuses pickled code."""
    state: dict[str, Any] = torch.load(directory / manifest.file, map_location="cpu", weights_only=True)
    return state

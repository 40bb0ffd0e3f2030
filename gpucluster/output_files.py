"""What a verb writes into a directory the user named: its files, whole, and nothing stale.

`cdk.out` and `rendered/` are reused run after run. A file an earlier run wrote and
this one did not (another cluster's templates, a removed group's user-data) would be
read by the next `diff`, `scan` or cfn-lint as if it were current. So a verb writes
into a fresh directory inside DIR, then moves each file into place (a rename: a reader
sees the old file or the new one, never half of one), and removes what its previous
run listed in DIR/.gpucluster-VERB.json and did not write again. A file the user put
into DIR is in no list and is never touched; one gpucluster wrote and the user has
changed since (its sha256 differs) is kept and named.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.bad_input import writing_into


def manifest_name(verb: str) -> str:
    return f".gpucluster-{verb.replace(' ', '-')}.json"


@dataclass
class Output:
    """A run's files: written under `staging`, moved to `root` when the run succeeds."""

    root: Path
    staging: Path
    verb: str
    kept: list[Path] = field(default_factory=list)

    def final(self, written: Path) -> Path:
        """Where `written` (a path under `staging`) is once the run succeeded."""
        return self.root / written.relative_to(self.staging)

    def notes(self) -> list[str]:
        """A warning line for each stale file kept because the user changed it."""
        return [
            f"{path}: kept: an earlier `gpucluster {self.verb}` wrote it and it has changed "
            "since; delete it if it is stale"
            for path in self.kept
        ]


@contextmanager
def replacing(root: Path, verb: str, option: str) -> Iterator[Output]:
    """Write the run's files under the yielded Output's `staging`; when the block ends
    without an exception they replace the previous run's in `root`. On an exception
    `root` is as it was. A directory that cannot be written is bad input for `option`."""
    with writing_into(root, option):
        root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=manifest_name(verb).removesuffix(".json") + "-", dir=root))
    try:
        output = Output(root, staging, verb)
        yield output
        with writing_into(root, option):
            _publish(output)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _publish(output: Output) -> None:
    root, staging = output.root, output.staging
    manifest = root / manifest_name(output.verb)
    previous = _listed(manifest)
    written: dict[str, str] = {}
    for path in sorted(p for p in staging.rglob("*") if p.is_file()):
        relative = path.relative_to(staging).as_posix()
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        written[relative] = _sha256(path)
        os.replace(path, target)
    for relative, digest in sorted(previous.items()):
        target = root / relative
        if relative in written or not _ours_to_remove(root, target):
            continue
        if _sha256(target) != digest:
            output.kept.append(target)
            continue
        target.unlink()
        _remove_empty_parents(target.parent, root)
    temp = staging / manifest.name
    temp.write_text(json.dumps({"written by": f"gpucluster {output.verb}", "files": written}, indent=1))
    os.replace(temp, manifest)


def _listed(manifest: Path) -> dict[str, str]:
    """relative path -> sha256 of what the previous run wrote; nothing when unreadable."""
    try:
        files = json.loads(manifest.read_text()).get("files", {})
    except (OSError, ValueError, AttributeError):
        return {}
    if not isinstance(files, dict):
        return {}
    return {str(path): str(digest) for path, digest in files.items()}


def _ours_to_remove(root: Path, target: Path) -> bool:
    # A hand-edited or foreign list must not reach outside DIR, nor through a link.
    if target.is_symlink() or not target.is_file():
        return False
    return target.resolve().is_relative_to(root.resolve())


def _remove_empty_parents(directory: Path, root: Path) -> None:
    while directory != root and directory.is_relative_to(root) and not any(directory.iterdir()):
        directory.rmdir()
        directory = directory.parent


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()

"""Which files the secret scan reads: every file under a directory, inside archives too.

Symbolic links are followed, to files and to directories alike: a linked directory in
cdk.out or a rendered tree is shipped with its contents, so skipping it would call a
key in it clean. Each directory is entered once, by its device and inode, which also
ends link loops. What cannot be read (no permission, a link to nothing, an archive that
does not open) is not a finding but is not clean either: it is `Unchecked`, and fails
the scan. Sockets, FIFOs and devices hold no stored bytes to leak and are not read (a
FIFO would block the scan).
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster.progress import Meter
from gpucluster.scan.rules import Finding, scan_content
from gpucluster.slurm_release import PINNED_SHA256, PINNED_SLURM

_ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
# Third-party sources the Cluster stack ships byte for byte, pinned by sha256: none of the
# user's values can be in them, and their own test fixtures and examples (Slurm's holds
# literal passwords in contribs/) are not this cluster's secrets.
_PINNED_SOURCES = {PINNED_SHA256: f"the Slurm {PINNED_SLURM} source"}
_MAKE_READABLE = "make it readable (chmod, or run the scan as its owner) and scan again"


@dataclass(frozen=True)
class Unchecked:
    """A path whose contents were not read, what went wrong and how to fix it."""

    file: str
    problem: str
    fix: str


@dataclass
class Scan:
    findings: list[Finding] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)

    def add(self, other: Scan) -> None:
        self.findings += other.findings
        self.unchecked += other.unchecked


def _link_problem(path: Path, error: OSError) -> Unchecked:
    target = os.readlink(path)
    return Unchecked(
        path.as_posix(),
        f"could not be opened: a symbolic link to {target} ({error.strerror}), so it was not checked",
        "point the link at a file that exists, or remove it",
    )


def files_under(root: Path) -> tuple[list[Path], list[Unchecked]]:
    """Every regular file under `root` (or `root` itself), links followed, in path order."""
    files: list[Path] = []
    unchecked: list[Unchecked] = []
    entered: set[tuple[int, int]] = set()
    # A stack, not recursion: a deep tree must not reach Python's recursion limit.
    pending = [root]
    while pending:
        path = pending.pop()
        try:
            status = path.stat()
        except OSError as error:
            if path.is_symlink():
                unchecked.append(_link_problem(path, error))
            else:
                unchecked.append(
                    Unchecked(path.as_posix(), f"could not be read ({error.strerror})", _MAKE_READABLE)
                )
            continue
        if stat.S_ISREG(status.st_mode):
            files.append(path)
            continue
        if not stat.S_ISDIR(status.st_mode) or (status.st_dev, status.st_ino) in entered:
            continue
        entered.add((status.st_dev, status.st_ino))
        try:
            with os.scandir(path) as entries:
                # Popped in path order: a directory linked from two places is scanned under
                # the name that sorts first, the same on every run.
                pending += sorted((Path(entry.path) for entry in entries), reverse=True)
        except OSError as error:
            unchecked.append(
                Unchecked(
                    path.as_posix(),
                    f"could not be listed ({error.strerror}), so nothing in it was checked",
                    _MAKE_READABLE,
                )
            )
    return sorted(files), sorted(unchecked, key=lambda item: item.file)


def _scan_archive(name: str, data: bytes) -> Scan:
    scan = Scan()
    if name.lower().endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    scan.add(scan_bytes(f"{name}!{info.filename}", archive.read(info)))
        return scan
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        for member in archive.getmembers():
            extracted = archive.extractfile(member) if member.isfile() else None
            if extracted is not None:
                scan.add(scan_bytes(f"{name}!{member.name}", extracted.read()))
    return scan


def scan_bytes(name: str, data: bytes) -> Scan:
    """One file's content, by name; archives are opened and their members scanned, except
    a pinned third-party source, known by its sha256."""
    if hashlib.sha256(data).hexdigest() in _PINNED_SOURCES:
        return Scan()
    if name.lower().endswith(_ARCHIVE_SUFFIXES):
        try:
            return _scan_archive(name, data)
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as error:
            # Its members may hold anything; still read what is there as text.
            broken = Unchecked(
                name,
                f"could not be opened as an archive ({error}), so its members were not checked "
                "(its bytes were scanned as text)",
                "rebuild the archive (it is cut short or corrupt) and scan again",
            )
            return Scan(scan_content(name, data), [broken])
    return Scan(scan_content(name, data))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan_files(files: Iterable[Path], meter: Meter | None = None) -> Scan:
    """Each file read and scanned; `meter` is told the bytes done and the file at hand."""
    scan = Scan()
    done = 0
    for path in files:
        if meter is not None:
            meter.update(done, current=path.name)
        try:
            data = path.read_bytes()
        except OSError as error:
            scan.unchecked.append(
                Unchecked(path.as_posix(), f"could not be read ({error.strerror})", _MAKE_READABLE)
            )
            continue
        scan.add(scan_bytes(path.as_posix(), data))
        done += len(data)
    if meter is not None:
        meter.update(done, current="")
    return scan


def total_size(files: Iterable[Path]) -> int:
    return sum(_size(path) for path in files)


def scan_path(root: str | Path) -> Scan:
    """Every file under `root` (or `root` itself); archive members are `archive!member`."""
    files, unchecked = files_under(Path(root))
    scan = scan_files(files)
    scan.unchecked = unchecked + scan.unchecked
    return scan

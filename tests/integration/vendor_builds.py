"""Pyxis and Enroot built from the vendored release sources, once per source and key.

Production nodes install the pinned releases (software.*); the suite builds the same
programs from the tarballs in vendor/ so that a clean clone needs no network. A build
lands in `<cache>/<sha256[:16]>-<key>/root` (a DESTDIR tree) and is kept between
sessions: `key` names what the build depends on besides its source (the Slurm release
for Pyxis, the C library for Enroot's helpers), so another Slurm install gets its own.
Builds run on this host, with its compilers and C library; Pyxis takes its headers from the
pinned Slurm build (slurm_build.py). The cache directories are the tests' own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tests.integration.prerequisites import unavailable

if TYPE_CHECKING:
    from tests.integration.installs import SlurmInstall

VENDOR = Path(__file__).resolve().parent / "vendor"
PYXIS_TARBALL = "pyxis-0.24.0.tar.gz"
ENROOT_TARBALL = "enroot-4.1.2-14-g8ea147d.tar.gz"
PYXIS_CACHE = Path("/var/tmp/gpucluster-test-pyxis")
ENROOT_CACHE = Path("/var/tmp/gpucluster-test-enroot")
BUILD_TIMEOUT = 300
BUILT_MARKER = ".built"

# Enroot's Makefile builds its helpers against bundled libbsd, linux headers and makeself
# (git submodules, absent from the tarball). With FORCE_GLIBC=1 and `make -o deps` it uses
# Debian's instead: libbsd.a (strlcpy, strtoi) and the kernel headers from the default
# include path, and /usr/bin/makeself in the place of its bundled copy.
# The runtime dependencies Enroot's .deb declares come too: squashfs-tools, bsdextrautils
# (column, for `enroot list`), and curl, jq, parallel and zstd for `enroot import`.
ENROOT_PACKAGES = (
    "gcc libc6-dev make linux-libc-dev libbsd-dev makeself squashfs-tools bsdextrautils curl jq parallel zstd"
)
PYXIS_PACKAGES = "gcc libc6-dev make binutils"


def libc_version() -> str:
    """The C library builds link ("glibc 2.36" -> "glibc-2.36"), part of their cache keys."""
    version = os.confstr("CS_GNU_LIBC_VERSION")
    assert version is not None, "the suite runs on a glibc system (Debian 12)"
    return version.replace(" ", "-")


def expected_sha256(name: str) -> str:
    for line in (VENDOR / "SHA256SUMS").read_text().splitlines():
        digest, _, file = line.partition("  ")
        if file == name:
            return digest
    raise AssertionError(f"{name} is not listed in {VENDOR / 'SHA256SUMS'}")


def verified(name: str) -> tuple[Path, str]:
    """The vendored tarball and its sha256, which must be the one SHA256SUMS lists."""
    tarball = VENDOR / name
    digest = hashlib.sha256(tarball.read_bytes()).hexdigest()
    assert digest == expected_sha256(name), f"{tarball} is not the vendored release"
    return tarball, digest


def _missing(tools: tuple[str, ...], files: tuple[str, ...], packages: str) -> str | None:
    """What this host lacks of `tools` and `files`, with the command that adds `packages`."""
    fix = f"apt-get install {packages}"
    for tool in tools:
        if shutil.which(tool) is None:
            return f"{tool} is missing ({fix})"
    for file in files:
        if not has_header(Path("/"), file):
            return f"{file} is missing ({fix})"
    return None


def has_header(root: Path, file: str) -> bool:
    """`file` under `root`, or in its multiarch include directory, where Debian 13's
    libbsd-dev puts bsd/string.h (/usr/include/x86_64-linux-gnu/bsd/string.h)."""
    relative = file.lstrip("/")
    multiarch = relative.replace("usr/include/", "usr/include/*/", 1)
    return (root / relative).exists() or any(root.glob(multiarch))


def _run(command: list[str], cwd: Path, timeout: float) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(command)} (in {cwd}):\n{done.stdout}\n{done.stderr}"


def build_dir(cache: Path, digest: str, key: str) -> Path:
    """Where the build of the source with sha256 `digest` for `key` lives."""
    return cache / f"{digest[:16]}-{key}"


def build_once(
    cache: Path,
    name: str,
    key: str,
    steps: Callable[[Path, Path], list[list[str]]],
    timeout: float = BUILD_TIMEOUT,
) -> Path:
    """The tree `root` of `name` built by `steps(source, root)` (a DESTDIR or a --prefix); built
    only when the cache holds no finished build for this source and key (the marker comes
    last). Each step may take `timeout` seconds."""
    tarball, digest = verified(name)
    build = build_dir(cache, digest, key)
    root = build / "root"
    if (build / BUILT_MARKER).is_file():
        return root
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    with tarfile.open(tarball) as archive:
        archive.extractall(build, filter="data")
    source = build / name.removesuffix(".tar.gz")
    assert source.is_dir(), f"{name} did not unpack to {source.name}/"
    for command in steps(source, root):
        _run(command, source, timeout)
    (build / BUILT_MARKER).touch()
    return root


def _pyxis_steps(install: SlurmInstall) -> Callable[[Path, Path], list[list[str]]]:
    # As build_pyxis on the nodes: make against the Slurm's include directory (CPPFLAGS
    # from the environment: Pyxis's Makefile appends it to its own, a command-line
    # CPPFLAGS would replace them), then make install into /usr/local.
    include = f"CPPFLAGS=-I{install.prefix / 'include'}"
    return lambda source, root: [
        ["env", include, "make", f"-j{os.cpu_count() or 1}"],
        ["make", "install", f"DESTDIR={root}"],
    ]


def pyxis_library(install: SlurmInstall, cache: Path = PYXIS_CACHE) -> Path:
    """spank_pyxis.so built against `install`'s spank.h (a SPANK plugin loads only into the
    Slurm release it was built for)."""
    missing = _missing(("gcc", "make", "strip"), (), PYXIS_PACKAGES)
    if missing is not None:
        unavailable("build Pyxis", missing)
    # Keyed by the Slurm build's own directory: another build of the same release is
    # another set of headers.
    root = build_once(cache, PYXIS_TARBALL, f"slurm-{install.prefix.parent.name}", _pyxis_steps(install))
    library = root / "usr" / "local" / "lib" / "slurm" / "spank_pyxis.so"
    assert library.is_file(), f"Pyxis built but {library} is missing"
    return library


def _enroot_steps(source: Path, root: Path) -> list[list[str]]:
    makeself = source / "deps" / "dist" / "makeself" / "bin" / "enroot-makeself"
    return [
        # The install's own makeself, wherever its PATH finds it.
        ["sh", "-c", 'install -D -m 755 "$(command -v makeself)" "$0"', str(makeself)],
        # -o deps: the submodule step is skipped, not attempted; prefix as the .deb installs.
        [
            "make",
            "-o",
            "deps",
            "FORCE_GLIBC=1",
            "prefix=/usr",
            "sysconfdir=/etc",
            f"DESTDIR={root}",
            f"-j{os.cpu_count() or 1}",
            "install",
        ],
    ]


def enroot_root(cache: Path = ENROOT_CACHE) -> Path:
    """The DESTDIR tree of Enroot built on this host, which also runs it (usr/bin,
    usr/lib/enroot, etc/enroot, usr/share/enroot)."""
    missing = _missing(
        ("gcc", "make", "makeself", "unsquashfs", "column", "curl", "jq", "parallel", "zstd"),
        ("/usr/include/bsd/string.h", "/usr/include/linux/seccomp.h"),
        ENROOT_PACKAGES,
    )
    if missing is not None:
        unavailable("build Enroot", missing)
    # Enroot's helpers link glibc dynamically: another C library gets its own build.
    root = build_once(cache, ENROOT_TARBALL, libc_version(), _enroot_steps)
    assert (root / "usr" / "bin" / "enroot").is_file(), f"Enroot built but {root}/usr/bin/enroot is missing"
    return root

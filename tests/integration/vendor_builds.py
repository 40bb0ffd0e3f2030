"""Pyxis and Enroot built from the vendored release sources, once per source and install.

Production nodes install the pinned releases (software.*); the suite builds the same
programs from the tarballs in vendor/ so that a clean clone needs no network. A build
lands in `<cache>/<sha256[:16]>-<key>/root` (a DESTDIR tree) and is kept between
sessions: `key` names what the build depends on besides its source (the Slurm release
for Pyxis, the C library for Enroot's helpers), so another Slurm install gets its own.
Each build runs inside the Slurm install it is for (installs.py: the host, or chrooted
into the Debian 13 root), with that install's headers, compilers and C library.
The cache directories are the tests' own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

from tests.integration.host import run
from tests.integration.installs import TRIXIE_PACKAGES, SlurmInstall
from tests.integration.prerequisites import unavailable

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
PYXIS_PACKAGES = "gcc libc6-dev make binutils libslurm-dev"
# Where a chrooted install looks for a tool (its PATH is the host's, which these cover).
ROOT_BIN_DIRS = ("usr/bin", "usr/sbin", "bin", "sbin")


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


def _missing(
    install: SlurmInstall, tools: tuple[str, ...], files: tuple[str, ...], packages: str
) -> str | None:
    """What `install` lacks of `tools` and `files`, with the command that adds `packages`."""
    if install.root is None:
        fix = f"apt-get install {packages}"
        has_tool = lambda tool: shutil.which(tool) is not None  # noqa: E731
    else:
        root = install.root
        fix = f"{TRIXIE_PACKAGES} must list {packages}; then run: sudo make system"
        has_tool = lambda tool: any((root / d / tool).exists() for d in ROOT_BIN_DIRS)  # noqa: E731
    for tool in tools:
        if not has_tool(tool):
            return f"{tool} is missing in the {install.name} install ({fix})"
    for file in files:
        if not _has_header(install.root or Path("/"), file):
            return f"{file} is missing in the {install.name} install ({fix})"
    return None


def _has_header(root: Path, file: str) -> bool:
    """`file` under `root`, or in its multiarch include directory, where Debian 13's
    libbsd-dev puts bsd/string.h (/usr/include/x86_64-linux-gnu/bsd/string.h)."""
    relative = file.lstrip("/")
    multiarch = relative.replace("usr/include/", "usr/include/*/", 1)
    return (root / relative).exists() or any(root.glob(multiarch))


def _run(install: SlurmInstall, command: list[str], cwd: Path) -> None:
    # chroot starts in the root's /: `env -C` enters the source tree inside the install.
    done = subprocess.run(
        install.command(["env", "-C", str(cwd), *command]),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, (
        f"{' '.join(command)} (in {cwd}, {install.name}):\n{done.stdout}\n{done.stderr}"
    )


def build_once(
    install: SlurmInstall, cache: Path, name: str, key: str, steps: Callable[[Path, Path], list[list[str]]]
) -> Path:
    """The DESTDIR tree of `name` built by `steps(source, destdir)` inside `install`; built
    only when the cache holds no finished build for this source and key (the marker comes
    last). The cache is under /var/tmp, which a chrooted install sees at the same path."""
    tarball, digest = verified(name)
    build = cache / f"{digest[:16]}-{key}"
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
        _run(install, command, source)
    (build / BUILT_MARKER).touch()
    return root


def _pyxis_steps(source: Path, root: Path) -> list[list[str]]:
    # As build_pyxis on the nodes: make, then make install into /usr/local.
    return [["make", f"-j{os.cpu_count() or 1}"], ["make", "install", f"DESTDIR={root}"]]


def pyxis_library(install: SlurmInstall, cache: Path = PYXIS_CACHE) -> Path:
    """spank_pyxis.so built against `install`'s spank.h (a SPANK plugin loads only into the
    Slurm release it was built for)."""
    missing = _missing(install, ("gcc", "make", "strip"), ("/usr/include/slurm/spank.h",), PYXIS_PACKAGES)
    if missing is not None:
        unavailable("build Pyxis", missing)
    root = build_once(install, cache, PYXIS_TARBALL, f"slurm-{install.release()}", _pyxis_steps)
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


def libc_key(install: SlurmInstall) -> str:
    """Enroot's helpers link the build's glibc dynamically: an install with another C
    library gets its own build ("glibc 2.36" -> "glibc-2.36")."""
    return run(*install.command(["getconf", "GNU_LIBC_VERSION"])).stdout.strip().replace(" ", "-")


def enroot_root(install: SlurmInstall, cache: Path = ENROOT_CACHE) -> Path:
    """The DESTDIR tree of Enroot built in `install`, which also runs it (usr/bin,
    usr/lib/enroot, etc/enroot, usr/share/enroot)."""
    missing = _missing(
        install,
        ("gcc", "make", "makeself", "unsquashfs", "column", "curl", "jq", "parallel", "zstd"),
        ("/usr/include/bsd/string.h", "/usr/include/linux/seccomp.h"),
        ENROOT_PACKAGES,
    )
    if missing is not None:
        unavailable("build Enroot", missing)
    root = build_once(install, cache, ENROOT_TARBALL, libc_key(install), _enroot_steps)
    assert (root / "usr" / "bin" / "enroot").is_file(), f"Enroot built but {root}/usr/bin/enroot is missing"
    return root

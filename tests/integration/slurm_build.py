"""The pinned Slurm (25.11.7) built from the vendored source, once per source, flags and
C library, as nodes build it (gpucluster.slurm.build: the same configure flags).

The build is configured with its cache directory as prefix and installed there, so its
programs find their plugins and libraries in place; it reads /etc/slurm by default, but
the suite always names its slurm.conf (SLURM_CONF), and configless slurmd and sackd
cache under /run/slurm as on a node. The cache is the suite's own:
`/var/tmp/gpucluster-test-slurm/<sha256[:16]>-<flags>-<libc>/root`.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gpucluster.slurm.build import CONFIGURE_FLAGS, CONTRIBS, PAM_MODULE, REQUIRED_PLUGINS, REQUIRED_PROGRAMS
from gpucluster.slurm_release import PINNED_SLURM
from tests.integration.prerequisites import unavailable
from tests.integration.vendor_builds import build_dir, build_once, expected_sha256, has_header, libc_version

SLURM_TARBALL = f"slurm-{PINNED_SLURM}.tar.gz"
SLURM_CACHE = Path("/var/tmp/gpucluster-test-slurm")
# A cold configure + make -j2 + make install took 3 min on an idle 2-core machine.
SLURM_BUILD_TIMEOUT = 1500
# The suite runs several slurmd on one host, which is what this option is for (SchedMD's
# testing aid, as in Debian's own build): each node's cgroups, spool and logs are its own
# (`slurm_<node>`); without it two nodes' steps share /sys/fs/cgroup/*/slurm/uid_0/job_N and
# one node's cleanup removes the other's ("Slurmd could not execve job"). Nodes run one
# slurmd each and build without it.
SUITE_FLAGS = ("--enable-multiple-slurmd",)
# pam_slurm_adopt (CONTRIBS) goes under the prefix, as nodes' goes into PAM's directory;
# test_ssh_adoption shows it to PAM there. configure wants the directory to exist.
PAM_DIR = "lib/security"
# The Debian 12 packages the configure flags need (.ci/debian-packages lists them), each
# with a header that tells it is there.
BUILD_HEADERS = {
    "libmunge-dev": "/usr/include/munge.h",
    # Debian keeps PMIx in its own prefix, one of those configure searches.
    "libpmix-dev": "/usr/lib/x86_64-linux-gnu/pmix2/include/pmix.h",
    "libhwloc-dev": "/usr/include/hwloc.h",
    "libjwt-dev": "/usr/include/jwt.h",
    "libjson-c-dev": "/usr/include/json-c/json.h",
    "libyaml-dev": "/usr/include/yaml.h",
    "libhttp-parser-dev": "/usr/include/http_parser.h",
    "libmariadb-dev": "/usr/include/mariadb/mysql.h",
    "libdbus-1-dev": "/usr/include/dbus-1.0/dbus/dbus.h",
    "liblua5.3-dev": "/usr/include/lua5.3/lua.h",
    "libpam0g-dev": "/usr/include/security/pam_appl.h",
}


def build_key() -> str:
    """What the build depends on besides its source: the configure flags and the C library."""
    parts = (*CONFIGURE_FLAGS, *SUITE_FLAGS, f"--with-pam_dir={PAM_DIR}", *CONTRIBS)
    flags = hashlib.sha256(" ".join(parts).encode()).hexdigest()[:8]
    return f"{flags}-{libc_version()}"


def slurm_prefix() -> Path:
    """Where the pinned build lives (its --prefix), built or not."""
    return build_dir(SLURM_CACHE, expected_sha256(SLURM_TARBALL), build_key()) / "root"


def missing_build_dependencies() -> str | None:
    """Which Debian package the build lacks, with the command that adds them."""
    for package, header in BUILD_HEADERS.items():
        if not has_header(Path("/"), header):
            return f"{header} is missing ({package}; run: sudo make system)"
    return None


def _steps(source: Path, root: Path) -> list[list[str]]:
    # Installed where it runs, no DESTDIR. /run: sackd's and slurmd's runtime files, as on nodes.
    configure = [
        "./configure",
        f"--prefix={root}",
        "--sysconfdir=/etc/slurm",
        "--localstatedir=/var",
        "--runstatedir=/run",
        f"--with-pam_dir={root / PAM_DIR}",
        *CONFIGURE_FLAGS,
        *SUITE_FLAGS,
    ]
    return [
        ["mkdir", "-p", str(root / PAM_DIR)],
        configure,
        ["make", f"-j{os.cpu_count() or 1}"],
        ["make", "install"],
        *(["make", "-C", contrib, "install"] for contrib in CONTRIBS),
    ]


def pam_module(root: Path) -> Path:
    """pam_slurm_adopt.so of the build at `root`."""
    return root / PAM_DIR / PAM_MODULE


def pinned_slurm() -> Path:
    """The prefix of the pinned Slurm, built from the vendored tarball when not cached, with
    every program and plugin the flags promise (configure drops a feature quietly when a
    header is missing)."""
    missing = missing_build_dependencies()
    if missing is not None:
        unavailable(f"build Slurm {PINNED_SLURM}", missing)
    root = build_once(SLURM_CACHE, SLURM_TARBALL, build_key(), _steps, timeout=SLURM_BUILD_TIMEOUT)
    absent = [
        path
        for path in (
            *(f"sbin/{program}" for program in REQUIRED_PROGRAMS),
            *(f"lib/slurm/{plugin}.so" for plugin in REQUIRED_PLUGINS),
            f"{PAM_DIR}/{PAM_MODULE}",
        )
        if not (root / path).exists()
    ]
    assert not absent, f"Slurm {PINNED_SLURM} built in {root} without {', '.join(absent)}"
    return root

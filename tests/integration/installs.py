"""The Slurm installs the real-Slurm suite runs on, and how a command enters one.

`host`: this machine's Debian 12 packages (Slurm 22.05). `trixie`: a Debian 13 root file
system (Slurm 24.11) that `.ci/system` builds with mmdebstrap. Its daemons and commands
run in that root (pivot_root), in a private mount namespace that binds the host paths a
test names (its temporary directory, the munge socket under /run, the network namespace
files, this repository and the Python that runs the jobs) at the same paths inside, so
the rendered configuration and the tests see one set of paths. The network namespace is
whatever the caller is in: `nsenter --net=... <command>` works for both installs.

Ubuntu 24.04's nodes run 23.11, between the two: the suite runs every test on both.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.integration.host import HarnessError, run

REPO = Path(__file__).resolve().parents[2]
TRIXIE_PACKAGES = REPO / ".ci" / "trixie-packages"
TRIXIE_CACHE = Path("/var/tmp/gpucluster-test-trixie")
SLURM_TOOLS = ("slurmctld", "slurmd", "scontrol", "sbatch", "srun")

# Bound into the root at the same path, in this order (the first two hold mounts the
# daemons need, /var/tmp holds the suite's build caches). /run has the munge socket, the
# network namespace files and /run/slurm/conf that configless daemons write.
_SYSTEM_BINDS = ("/var/tmp", "/proc", "/sys", "/dev", "/run", "/tmp", "/etc/hosts", "/etc/resolv.conf")

# Runs in the new mount namespace: bind each path at the same place under the root, then
# make the root the namespace's own with pivot_root. Not chroot: the kernel refuses a
# chrooted process a new user namespace (EPERM, unshare(2)), and Enroot, which
# Pyxis runs from slurmstepd, makes one for every container. Mount points missing in the
# root are made (an empty file for a file).
_ENTER = r"""
root=$1; shift
mount --bind "$root" "$root"
while [ "$1" != -- ]; do
  dst="$root$1"
  if [ -d "$1" ]; then mkdir -p "$dst"; else mkdir -p "${dst%/*}"; [ -e "$dst" ] || : >"$dst"; fi
  mount --rbind "$1" "$dst"
  shift
done
shift
cd "$root"
mkdir -p .gcs-old-root
pivot_root . .gcs-old-root
umount -l /.gcs-old-root
exec "$@"
"""


def list_key(packages: Path) -> str:
    """The cache key `.ci/system` gives a package list: sha256 of its lines without comments."""
    lines = [line for line in packages.read_text().splitlines() if line and not line.startswith("#")]
    return hashlib.sha256(("\n".join(lines) + "\n").encode()).hexdigest()[:12]


def _python_paths() -> list[str]:
    """Where the jobs' Python lives: the venv and its base install. A Python under /usr
    (Debian's) cannot have its whole prefix bound over the root's own /usr: then each hop
    from the venv's interpreter to the real binary, and its standard library, are bound
    one by one (the root has the shared libraries it loads: .ci/trixie-packages)."""
    paths = {sys.prefix, sys.base_prefix}
    if not sys.base_prefix.startswith("/usr"):
        return sorted(paths)
    hop = Path(sys.executable)
    while hop.is_symlink():
        hop = hop.parent / hop.readlink()
        if str(hop).startswith("/usr"):
            paths.add(str(hop))
    config = sysconfig.get_paths()
    paths |= {config["stdlib"], config["platstdlib"]}
    paths |= {path for path in ("/usr/lib/python3/dist-packages",) if Path(path).is_dir()}
    return sorted(path for path in paths if path != "/usr")


def _outermost(paths: Sequence[str]) -> list[str]:
    """Drop paths that lie inside another one already bound (rbind brings them along)."""
    kept: list[str] = []
    for path in paths:
        if not any(path == other or path.startswith(other.rstrip("/") + "/") for other in kept):
            kept.append(path)
    return kept


@dataclass(frozen=True)
class SlurmInstall:
    """Where Slurm's programs come from; `root` None means this host's own packages."""

    name: str
    series: str | None  # the Slurm release series the install must run, e.g. "24.11"
    root: Path | None

    @property
    def test_id(self) -> str:
        return f"slurm{self.series or '-host'}-{self.name}"

    def missing(self) -> str | None:
        """Why this install cannot run, or None."""
        if self.root is None:
            for tool in SLURM_TOOLS:
                if shutil.which(tool) is None:
                    return f"{tool} is not installed (apt-get install slurm-wlm slurm-client munge iproute2)"
            return None
        if not (self.root / "usr" / "sbin" / "slurmctld").is_file():
            return f"the Debian 13 root with Slurm 24.11 is not built at {self.root} (run: sudo make system)"
        return None

    def command(self, argv: Sequence[str], binds: Sequence[str] = ()) -> list[str]:
        """`argv` run inside this install; `binds`: more host paths it must see."""
        if self.root is None:
            return list(argv)
        paths = _outermost([*_SYSTEM_BINDS, str(REPO), *_python_paths(), *binds])
        return [
            "unshare",
            "--mount",
            "--propagation=private",
            "sh",
            "-c",
            _ENTER,
            "enter",
            str(self.root),
            *paths,
            "--",
            *argv,
        ]

    def release(self) -> str:
        """The release its slurmctld reports ("slurm-wlm 24.11.5" -> "24.11.5")."""
        output = run(*self.command(["slurmctld", "-V"])).stdout
        match = re.search(r"(\d+\.\d+\.\d+)", output)
        if match is None:
            raise HarnessError(
                f"cannot read a release from `slurmctld -V` in {self.name}: {output.strip()!r}"
            )
        if self.series is not None and not match[1].startswith(self.series + "."):
            raise HarnessError(f"the {self.name} install runs Slurm {match[1]}, not {self.series}")
        return match[1]


TRIXIE = SlurmInstall(name="trixie", series="24.11", root=TRIXIE_CACHE / list_key(TRIXIE_PACKAGES))


def _host_series() -> str | None:
    """The host's Slurm series, for the test id; None when it has no Slurm."""
    if shutil.which("slurmctld") is None:
        return None
    match = re.search(r"(\d+\.\d+)\.\d+", run("slurmctld", "-V", check=False).stdout)
    return match[1] if match else None


def installs() -> list[SlurmInstall]:
    """Every install the suite runs on; one that is missing skips (fails in CI) its tests."""
    return [SlurmInstall(name="debian12", series=_host_series(), root=None), TRIXIE]

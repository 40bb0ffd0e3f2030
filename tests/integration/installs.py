"""The Slurm the real-Slurm suite runs, and how a command runs with it.

One install: the pinned release nodes run (gpucluster.slurm.build, 25.11.7), built from
the vendored source into the suite's cache (slurm_build.py). Its programs run on this
host with the build's sbin and bin first on PATH, so every Slurm command, daemon and job
step (which inherits the PATH) uses it. The network namespace is whatever the caller is
in: `nsenter --net=... <command>` works as for any program.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from gpucluster.slurm_release import PINNED_SLURM
from tests.integration.host import HarnessError, run
from tests.integration.slurm_build import missing_build_dependencies, pinned_slurm, slurm_prefix

# Prepends the build's directories to the PATH the command is started with (which the
# caller may have extended, e.g. with Enroot's directory for slurmd), unless that PATH
# names them already: then the caller chose what comes first (a test's stand-in srun).
_WITH_PREFIX = 'case ":$PATH:" in *":$0/bin:"*) ;; *) PATH="$0/sbin:$0/bin:$PATH" ;; esac; exec "$@"'


@dataclass(frozen=True)
class SlurmInstall:
    """A Slurm built into `prefix`; `release` is the one its slurmctld must report."""

    name: str
    release: str
    prefix: Path

    @property
    def test_id(self) -> str:
        return f"slurm{self.release}-{self.name}"

    def missing(self) -> str | None:
        """Why this install cannot be built here, or None."""
        return missing_build_dependencies()

    @property
    def path(self) -> list[str]:
        """The directories of this install's programs, for a PATH."""
        return [str(self.prefix / "sbin"), str(self.prefix / "bin")]

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run with this install's programs on PATH, first unless PATH has them."""
        return ["sh", "-c", _WITH_PREFIX, str(self.prefix), *argv]

    def check_release(self) -> None:
        """The built slurmctld is the release it should be ("slurm 25.11.7")."""
        output = run(*self.command(["slurmctld", "-V"])).stdout
        match = re.search(r"(\d+\.\d+\.\d+)", output)
        if match is None or match[1] != self.release:
            raise HarnessError(f"the {self.name} install runs {output.strip()!r}, not Slurm {self.release}")


PINNED = SlurmInstall(name="pinned", release=PINNED_SLURM, prefix=slurm_prefix())


def installs() -> list[SlurmInstall]:
    """Every install the suite runs on; one that cannot be built skips (fails in CI) its tests."""
    return [PINNED]


def build(install: SlurmInstall) -> None:
    """Build `install` when its cache has none, and check it runs its release."""
    built = pinned_slurm()
    assert built == install.prefix, f"the pinned Slurm was built in {built}, not {install.prefix}"
    install.check_release()

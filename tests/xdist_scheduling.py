"""How `make test` spreads the suite over its pytest-xdist workers (`-n 2`).

The real-Slurm tests share one cluster on the machine (its ports, network names, daemons,
and the lock in tests/integration/conftest.py), so every test under tests/integration is
one unit of work, run in collection order by one worker; each other test is a unit of its
own. xdist hands out the largest unit first, so that worker starts the real-Slurm tests
at once while the others run the rest. (pytest-xdist's `--dist loadgroup` would do this
from an `xdist_group` mark, but 3.8 renames the test ids through `Item._nodeid`, which
pytest 9 no longer reads: every marked test stayed a unit of its own.)"""

from __future__ import annotations

from typing import Any

import pytest

REAL_SLURM = "tests/integration/"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class RealSlurmTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return REAL_SLURM if nodeid.startswith(REAL_SLURM) else nodeid

    return RealSlurmTogether(config, log)

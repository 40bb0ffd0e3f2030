"""The cluster's people on the suite's host, made by the nodes' own step (lib/users.sh
create_users) from the rendered users table: slurmctld, slurmd and the jobs see them through
this host's /etc/passwd, as a node sees those its bootstrap made. Their homes are under the
run's root; teardown removes the accounts this run made, and only those."""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

from gpucluster.bootstrap import people
from gpucluster.bootstrap.bundle import BUNDLE_SOURCES
from gpucluster.resolved.users import ResolvedUser
from tests.integration.host import HarnessError, Teardown, run

# The bootstrap's create_users with R empty (this host's accounts) and die as lib/failure.sh
# has it, without the instance's failure reporting.
_CREATE = """
set -euo pipefail
die() { log "FATAL: $*"; exit 1; }
source "$BUNDLE_DIR/lib/common.sh"
source "$BUNDLE_DIR/lib/users.sh"
CURRENT_STEP=create_users
create_users
"""


def home_base(root: Path) -> Path:
    return root / "home"


def create_people(users: tuple[ResolvedUser, ...], root: Path, teardown: Teardown) -> None:
    existing = {user.name for user in users if _exists(user.name)}
    bundle = root / "bundle"
    (bundle / "lib").mkdir(parents=True, exist_ok=True)
    for name in ("common.sh", "users.sh"):
        (bundle / "lib" / name).write_text((BUNDLE_SOURCES / "lib" / name).read_text())
    table = bundle / people.USERS_FILE
    table.parent.mkdir(parents=True, exist_ok=True)
    table.write_text(people.users_table(users))
    home_base(root).mkdir(parents=True, exist_ok=True)
    for user in users:
        if user.name not in existing:
            teardown.push(f"user {user.name}", lambda name=user.name: _remove(name))
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "R": "",
        "BUNDLE_DIR": str(bundle),
        "USERS_FILE": people.USERS_FILE,
        "HOME_BASE": str(home_base(root)),
    }
    result = subprocess.run(["bash", "-c", _CREATE], env=env, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise HarnessError(f"the bootstrap's create_users failed on this host:\n{result.stderr}")


def _exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _remove(name: str) -> None:
    if _exists(name):
        run("userdel", name)
    if run("getent", "group", name, check=False).returncode == 0:
        run("groupdel", name)

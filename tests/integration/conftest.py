"""One real Slurm cluster on the pinned Slurm build (installs.py), torn down even on failure.

`slurm_cluster` is parametrized over the installs, so test ids name the release
(`[slurm25.11.7-pinned]`); were there more than one, pytest would run all tests of one
install before it tears that cluster down and starts the next (they share ports and
network names)."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpucluster.config.loader import load_config
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from tests.integration.accounting import ASSOC_USAGE, SuiteAccounting, suite_settings, with_suite_accounting
from tests.integration.cluster import SLURM_CONF_LINK, SlurmCluster
from tests.integration.containers import install_enroot
from tests.integration.daemons import Munge
from tests.integration.host import HarnessError, Teardown, kill_pid, wait_for
from tests.integration.installs import SlurmInstall, build, installs
from tests.integration.login import LoginNode, sackd_unit
from tests.integration.network import Network, leftovers
from tests.integration.people import create_people
from tests.integration.prerequisites import missing_prerequisites, unavailable
from tests.integration.queries import node_states
from tests.integration.runs import Reclaimed, claim, end_interrupted_runs, keep, suite_processes
from tests.integration.vendor_builds import enroot_root as build_enroot
from tests.integration.vendor_builds import pyxis_library as build_pyxis
from tests.slurm.conf_text import conf_line_of

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "default.yaml"
# Realistic 17-digit instance ids: node names are as long as on EC2, which matters for
# the Unix socket paths slurmstepd makes under the spool directory (108-byte limit).
NODE_INSTANCES = {1: "i-0a1b2c3d4e5f60001", 2: "i-0a1b2c3d4e5f60002"}
# Nodes 3 and 4 are started by tests; the login namespace comes after them.
LOGIN_INDEX = 5
REGISTER_TIMEOUT = 30
LOCK_FILE = Path("/var/tmp/gpucluster-slurm-suite.lock")
# Longer than a whole real-Slurm suite on a loaded 2-core machine.
LOCK_WAIT = 2400
# Set by a run for a run it starts itself: the pid that holds LOCK_FILE.
LOCK_HOLDER = "GPUCLUSTER_SUITE_LOCK_HOLDER"


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by session parameters
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """test_interrupted_run.py needs the machine before the session cluster exists: it
    goes first among the real-Slurm tests, and its last step starts that cluster."""
    first = [item for item in items if item.path.name == "test_interrupted_run.py"]
    if not first:
        return
    rest = [item for item in items if item not in first]
    at = next((n for n, item in enumerate(rest) if item.get_closest_marker("slurm")), len(rest))
    items[:] = rest[:at] + first + rest[at:]


def _remove_conf_link(root: Path, made_run_dir: bool) -> None:
    """Configless slurmd links /run/slurm/conf to its cache; drop the link if it is ours."""
    if SLURM_CONF_LINK.is_symlink() and str(os.readlink(SLURM_CONF_LINK)).startswith(str(root)):
        SLURM_CONF_LINK.unlink()
    if made_run_dir and SLURM_CONF_LINK.parent.exists() and not any(SLURM_CONF_LINK.parent.iterdir()):
        SLURM_CONF_LINK.parent.rmdir()


def _remove_dangling_conf_link() -> list[str]:
    """An interrupted run's /run/slurm/conf link into the root it no longer has."""
    if SLURM_CONF_LINK.is_symlink() and not SLURM_CONF_LINK.exists():
        SLURM_CONF_LINK.unlink()
        return [f"{SLURM_CONF_LINK} link"]
    return []


def _remove_cgroups(group: str) -> list[str]:
    """slurmd leaves one cgroup tree per node (`slurm_<node>`) in each v1 controller: empty
    after a clean stop; after an interrupted run, a job's cgroup may still hold its processes,
    frozen if slurmstepd died between freezing and thawing them to deliver a signal."""
    base = Path("/sys/fs/cgroup")
    removed = []
    for tree in base.glob(f"*/slurm_{group}-i-*"):
        directories = [tree, *(path for path in tree.rglob("*") if path.is_dir())]
        for directory in sorted(directories, key=lambda p: len(p.parts), reverse=True):
            _empty_cgroup(directory)
            wait_for(f"cgroup {directory} to go", lambda d=directory: _rmdir_unless_busy(d), timeout=15)
        removed.append(f"cgroup {tree.relative_to(base)}")
    return removed


def _rmdir_unless_busy(directory: Path) -> bool:
    """The kernel may hold a cgroup a moment after its last process exited (EBUSY)."""
    try:
        directory.rmdir()
    except OSError as error:
        if error.errno != errno.EBUSY:
            raise
        return False
    return True


def _empty_cgroup(directory: Path) -> None:
    state = directory / "freezer.state"
    if state.exists() and state.read_text().strip() != "THAWED":
        state.write_text("THAWED")

    def members() -> list[int]:
        return [int(pid) for pid in (directory / "cgroup.procs").read_text().split()]

    for pid in members():
        kill_pid(pid)
    wait_for(f"the processes in cgroup {directory} to exit", lambda: not members(), timeout=15)


def _fail_on_leftovers(root: Path) -> None:
    found = leftovers() + [
        f"{process.name} (pid {process.pid})" for process in suite_processes() if str(root) in process.roots
    ]
    if found:
        raise HarnessError("still present after teardown: " + ", ".join(found))


def _lock_held_by_parent() -> bool:
    """A run started by a test of a run that holds the lock (test_interrupted_run.py) runs
    under its parent's lock: waiting for it would never end."""
    holder = os.environ.get(LOCK_HOLDER)
    if holder is None or int(holder) != os.getppid() or not LOCK_FILE.exists():
        return False
    return LOCK_FILE.read_text().startswith(f"pid {holder} ")


@pytest.fixture(scope="session")
def machine_lock() -> Iterator[None]:
    """One real-Slurm suite per machine at a time: two would share the network namespace
    names and the Slurm ports, and each would end the other's daemons as an interrupted
    run's. A second suite (another checkout's `make test`, CI beside a developer) waits for
    the first."""
    if _lock_held_by_parent():
        yield
        return
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with LOCK_FILE.open("a+") as lock:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    lock.seek(0)
                    raise HarnessError(
                        f"another real-Slurm suite ({lock.read().strip() or 'unknown'}) held {LOCK_FILE} "
                        f"for {LOCK_WAIT} s; wait for it to end or stop it"
                    ) from None
                time.sleep(2)
        lock.truncate(0)
        lock.write(f"pid {os.getpid()} in {REPO}\n")
        lock.flush()
        yield


@pytest.fixture(scope="session", params=installs(), ids=lambda install: install.test_id)
def slurm_install(request: pytest.FixtureRequest, machine_lock: None) -> SlurmInstall:
    install: SlurmInstall = request.param
    reason = missing_prerequisites() or install.missing()
    if reason is not None:
        unavailable("run the real-Slurm suite", reason)
    build(install)
    return install


def _end_interrupted_runs(root: Path, group: str, network: Network, config: pytest.Config) -> Reclaimed:
    """Before anything of this run exists: end what an earlier run of the suite left, and
    say so in one line."""
    reclaimed = end_interrupted_runs(root)
    cgroups = _remove_cgroups(group)
    reclaimed.names += network.remove_leftovers() + _remove_dangling_conf_link()
    reclaimed.names += [f"{len(cgroups)} node cgroups"] if cgroups else []
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reclaimed and capture is not None:
        # Past the capture of this fixture's output, which pytest shows only on failure, and
        # on stderr: an xdist worker's terminal reporter writes to no terminal.
        with capture.global_and_fixture_disabled():
            print(reclaimed.line(), file=sys.stderr, flush=True)
    return reclaimed


@pytest.fixture(scope="session")
def slurm_cluster(request: pytest.FixtureRequest, slurm_install: SlurmInstall) -> Iterator[SlurmCluster]:
    # plugstack.conf marks Pyxis required, as in production: slurmd and srun need it built,
    # against this install's Slurm.
    pyxis_build = build_pyxis(slurm_install)
    cfg = with_suite_accounting(load_config(EXAMPLE))
    assert cfg.software.slurm == slurm_install.release, "the example renders for the release the suite runs"
    group = cfg.compute_groups[0]
    # Short path: slurmstepd's Unix sockets live under the spool directory.
    root = Path(tempfile.mkdtemp(prefix="gcs-", dir="/tmp"))
    # Readable by all, as a node's /etc and /usr are: jobs of users other than root read the
    # configuration and run Enroot from here. The munge key inside stays root's alone.
    root.chmod(0o755)
    claim(root)
    teardown = Teardown()
    network = Network(teardown)
    reclaimed = _end_interrupted_runs(root, group.name, network, request.config)
    teardown.push("leftover check", lambda: _fail_on_leftovers(root))
    if os.environ.get("GPUCLUSTER_KEEP_SLURM_TEST") != "1":
        teardown.push("test directory", lambda: shutil.rmtree(root, ignore_errors=True))
    else:
        teardown.push("test directory", lambda: keep(root))
    made_run_dir = not SLURM_CONF_LINK.parent.exists()
    teardown.push("/run/slurm/conf link", lambda: _remove_conf_link(root, made_run_dir))
    teardown.push("node cgroups", lambda: _remove_cgroups(group.name))
    munge = Munge(root, teardown)
    cluster = SlurmCluster(
        cfg=cfg,
        group=group,
        root=root,
        teardown=teardown,
        network=network,
        install=slurm_install,
        pyxis_build=pyxis_build,
        munge=munge,
        accounting=suite_settings(cfg, root),
        reclaimed=reclaimed,
    )
    accounting = SuiteAccounting(
        cfg=cfg,
        root=root,
        site=cluster.site.accounting,
        slurm_site=cluster.site,
        install=slurm_install,
        env=cluster.env,
        teardown=teardown,
    )
    cluster.accounting_daemons = accounting
    if cluster.tracking.why is not None:
        warnings.warn(
            f"real-Slurm suite runs {cluster.tracking.proctrack_type} and {cluster.tracking.task_plugin} "
            f"instead of production's cgroup plugins: {cluster.tracking.why}",
            stacklevel=1,
        )
    try:
        network.create()
        munge.start()
        # Before any Slurm daemon, as every node's bootstrap does.
        create_people(resolve(cfg).users, root, teardown)
        cluster.write_files()
        # Before any slurmd starts, as on a node: Pyxis's job epilog runs Enroot after every job.
        install_enroot(build_enroot(), cfg, group, root)
        accounting.start()
        # Pushed first: a controller that starts but never answers is stopped too.
        teardown.push("slurmctld", lambda: cluster.stop_controller(hard=False))
        cluster.start_controller()
        # A controller killed before its first state save would never start again with
        # accounting on: a clean restart writes it, as the head's bootstrap does.
        if not (Path(cluster.site.state_save_location) / ASSOC_USAGE).exists():
            cluster.stop_controller(hard=False)
            cluster.start_controller()
        accounting.apply_accounts()
        line = conf_line_of(cfg, group)
        for index, instance_id in NODE_INSTANCES.items():
            node = cluster.add_node(index, instance_id)
            node.start(line)
        for name in cluster.nodes:
            cluster.wait_node_state(name, lambda s: "IDLE" in s, "to register IDLE", REGISTER_TIMEOUT)
        yield cluster
    finally:
        problems = teardown.run()
        if problems:
            pytest.fail("teardown left things behind: " + "; ".join(problems), pytrace=False)


@pytest.fixture(scope="session")
def slurm_accounting(slurm_cluster: SlurmCluster) -> SuiteAccounting:
    """The session cluster's accounting: its database, slurmdbd and slurmrestd."""
    assert slurm_cluster.accounting_daemons is not None, "the session cluster runs accounting"
    return slurm_cluster.accounting_daemons


@pytest.fixture(scope="session")
def pyxis_library(slurm_cluster: SlurmCluster) -> Path:
    """spank_pyxis.so built from the vendored source for the installed Slurm."""
    return slurm_cluster.pyxis_build


@pytest.fixture
def cluster(slurm_cluster: SlurmCluster) -> SlurmCluster:
    """The session cluster with no jobs, every node IDLE and not drained."""
    slurm_cluster.slurm("scancel", "--full", "--user=root")
    for name in list(slurm_cluster.nodes):
        # Polled: one `scontrol show node` that times out (a loaded 2-core machine) reads as
        # a missing node; a node really gone stays so.
        info = wait_for(
            f"slurmctld to show node {name}", lambda n=name: slurm_cluster.node_info(n), timeout=15
        )
        if "DRAIN" in node_states(info):
            raise HarnessError(f"a previous test left node {name} unusable: {info}")

    def idle() -> bool:
        jobs = slurm_cluster.slurm("squeue", "-h", "-o", "%i").stdout.split()
        states = [node_states(slurm_cluster.node_info(n) or {"State": "GONE"}) for n in slurm_cluster.nodes]
        return not jobs and all("IDLE" in s for s in states)

    wait_for("no jobs and every node IDLE", idle, timeout=30)
    return slurm_cluster


@pytest.fixture(scope="session")
def slurm_login(slurm_cluster: SlurmCluster) -> LoginNode:
    """A login node of the session cluster, set up as the login bootstrap does
    (configure_slurm_client): sackd --conf-server."""
    cluster = slurm_cluster
    namespace, _ = cluster.network.add_namespace(LOGIN_INDEX)
    login = LoginNode(cluster, namespace)
    unit = sackd_unit(slurm_conf.conf_server(resolve(cluster.cfg), cluster.site))
    login.start(unit.argv, notify=unit.notify)
    wait_for(
        "sackd to fetch the served configuration",
        lambda: login.path("/run/slurm/conf/slurm.conf").exists(),
        timeout=REGISTER_TIMEOUT,
    )
    return login

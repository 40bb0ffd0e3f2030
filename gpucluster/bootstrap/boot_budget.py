"""How long a node may take to boot: every bounded wait of the bootstrap, in one place.

The bootstrap (templates/userdata/bundle) waits for apt locks, local NVMe, slurmctld and
its own registration, and retries package installs, downloads, AWS calls and mounts. Each
of those waits is named here with its seconds and rendered into the bundle's
conf/cluster.sh as a shell variable, so the scripts carry no literal waits
(tests/bootstrap/test_boot_budget.py fails on one). The compute group's launch lifecycle hook takes
its HeartbeatTimeout from the sum: a slow but healthy node is never abandoned while it is
still inside its own waits, and the node also sends RecordLifecycleActionHeartbeat every
HEARTBEAT_INTERVAL while it is within the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster import dcgm

Role = str
ROLES: tuple[Role, ...] = ("head", "login", "compute")

# Auto Scaling API reference, LifecycleHook: HeartbeatTimeout ranges from 30 to 7200 s;
# GlobalTimeout (the longest an instance may stay in a wait state, however many
# heartbeats) is 172800 s (48 h) or 100 x HeartbeatTimeout, whichever is smaller.
MAX_HEARTBEAT_TIMEOUT = 7200
MIN_HEARTBEAT_TIMEOUT = 30
MAX_GLOBAL_TIMEOUT = 172800
GLOBAL_TIMEOUT_FACTOR = 100


@dataclass(frozen=True)
class Poll:
    """A loop that checks, sleeps `interval` and gives up after `timeout` seconds of sleep.

    `probe` is the longest one check itself may take (nc -w), which the sleeps do not count.
    """

    name: str
    timeout: int
    interval: int
    roles: tuple[Role, ...]
    why: str
    probe: int = 0
    probe_name: str = ""

    @property
    def worst_case(self) -> int:
        return self.timeout + (self.timeout // self.interval + 1) * self.probe


@dataclass(frozen=True)
class Retry:
    """`retry ATTEMPTS cmd` (lib/common.sh) sleeps attempt x RETRY_BACKOFF after each failure."""

    name: str
    attempts: int
    # How many times one boot of each role calls a retried command of this kind: what a
    # boot in tests/shell_harness.py calls (tests/bootstrap/test_boot_budget.py checks), plus the
    # CloudWatch agent's download and install where the image lacks it, plus the instance
    # id that a failing compute node reads once more to tag itself.
    calls: dict[Role, int]
    why: str
    # The longest one attempt may take (curl --max-time), when the command bounds itself;
    # rendered as `command_timeout_name`.
    command_timeout: int = 0
    command_timeout_name: str = ""

    def worst_case(self, role: Role) -> int:
        calls = self.calls.get(role, 0)
        sleeps = calls * RETRY_BACKOFF * self.attempts * (self.attempts + 1) // 2
        return sleeps + calls * self.attempts * self.command_timeout


RETRY_BACKOFF = 5
USER_DATA_RETRIES = 5

POLLS: tuple[Poll, ...] = (
    Poll(
        "APT_LOCK_TIMEOUT",
        1200,
        10,
        ROLES,
        "apt-daily and unattended-upgrades hold the apt/dpkg locks on a first boot; apt-get "
        "also waits this long for the dpkg lock (DPkg::Lock::Timeout)",
    ),
    Poll(
        "NVME_TIMEOUT",
        600,
        5,
        ("compute",),
        "the DLAMI formats and mounts local NVMe in parallel with user data",
    ),
    # The head builds the pinned Slurm once per cluster on its first boot (lib/slurm_package.sh,
    # SLURM_BUILD_ALLOWANCE); nodes that boot alongside it wait for the package on EFS,
    # which later boots find ready.
    Poll(
        "SLURM_PACKAGE_TIMEOUT",
        1800,
        15,
        ("login", "compute"),
        "on a first deployment the head builds the Slurm package that every node installs",
    ),
    Poll(
        "CONTROLLER_TIMEOUT",
        900,
        10,
        ("login", "compute"),
        "on a first deployment slurmctld boots alongside the nodes",
        probe=5,
        probe_name="CONTROLLER_PROBE_TIMEOUT",
    ),
    Poll(
        "FABRIC_MANAGER_TIMEOUT",
        120,
        2,
        ("compute",),
        "nvidia-fabricmanager trains the NVLink fabric when it starts (NVSwitch types)",
    ),
    Poll(
        "DCGM_START_TIMEOUT",
        60,
        2,
        ("compute",),
        "nv-hostengine (nvidia-dcgm), which runs DCGM's diagnostic before the node joins",
    ),
    Poll(
        "REGISTER_TIMEOUT",
        300,
        10,
        ("compute",),
        "slurmd registers with slurmctld after it starts",
    ),
    # slurmctld starts only while it holds a lock in StateSaveLocation on EFS (flock
    # --wait SLURMCTLD_LOCK_WAIT), then reads its state: the head waits for both.
    Poll(
        "SLURMCTLD_START_TIMEOUT",
        600 + 120,
        5,
        ("head",),
        "a replaced head waits for the old one to release the controller lock on EFS",
    ),
    # slurmdbd creates its tables in a new database, or upgrades them, before it answers.
    Poll(
        "SLURMDBD_START_TIMEOUT",
        300,
        5,
        ("head",),
        "slurmdbd creates or upgrades its tables in the accounting database before it answers",
    ),
    # slurmrestd loads its plugins and answers a token's ping through slurmctld (lib/rest_api.sh).
    Poll(
        "SLURMRESTD_START_TIMEOUT",
        60,
        2,
        ("head",),
        "slurmrestd loads its plugins and answers on the head's private address",
        probe=5,
        probe_name="SLURMRESTD_PROBE_TIMEOUT",
    ),
)

RETRIES: tuple[Retry, ...] = (
    Retry(
        "PACKAGE_RETRIES",
        3,
        {"head": 3, "login": 4, "compute": 4},
        "apt-get update and install, the Enroot packages and the CloudWatch agent",
    ),
    Retry(
        "DOWNLOAD_RETRIES",
        3,
        {"head": 3, "login": 4, "compute": 4},
        # curl also retries each attempt this often itself (1, 2, 4 s apart: within the
        # work allowance).
        "release downloads (CloudWatch agent, Enroot, Enroot+caps, Pyxis) over HTTPS, and "
        "the Slurm source from the cluster's asset bucket (head)",
    ),
    Retry(
        "AWS_RETRIES",
        5,
        {"head": 5, "login": 3, "compute": 8},
        "instance metadata and SSM reads (instance id, storage parameters, log config), "
        "and the head's AMI id and its SSM write (record_head_image)",
    ),
    Retry(
        "MOUNT_RETRIES",
        5,
        {"head": 2, "login": 2, "compute": 2},
        "EFS on /home and FSx for Lustre",
    ),
    # The thin user data (templates/userdata/thin.sh.j2) reads the head's bundle pointer
    # from SSM and downloads the bundle from S3 before the bootstrap starts.
    Retry(
        "USER_DATA_RETRIES",
        USER_DATA_RETRIES,
        {"head": 2, "login": 1, "compute": 1},
        "the user data's SSM read (head) and bundle download",
    ),
    # Only when the image lacks the Lustre module for the booted kernel (lib/storage.sh).
    Retry(
        "LUSTRE_KEY_ATTEMPTS",
        5,
        {"head": 1, "login": 1, "compute": 1},
        "the FSx Lustre client repository key",
        command_timeout=60,
        command_timeout_name="LUSTRE_KEY_FETCH_TIMEOUT",
    ),
    Retry(
        "SLURM_PING_RETRIES",
        6,
        {"login": 1},
        "a login node's Slurm commands reach slurmctld through sackd or DNS SRV",
    ),
)

# Time spent working rather than waiting: package installs, the Pyxis build, EFA and GPU
# checks, the pre-join health check. Not bounded by the scripts; an allowance.
WORK_ALLOWANCE = 900
# DCGM's diagnostic before a compute node joins (the health check's --pre-join), bounded by
# the longest level a node may run then (gpucluster.dcgm).
DCGM_JOIN_ALLOWANCE = dcgm.join_bound_seconds()
# The head's build of the Slurm package on its first boot (configure, make, install):
# 6 min on a loaded 2-core machine (README "Which Slurm, and why"); a head has at least
# as many cores.
SLURM_BUILD_ALLOWANCE = 900
# What the hook's HeartbeatTimeout adds to the budget, so a boot that ends on the budget
# still completes its lifecycle action before the hook times out.
MARGIN = 300

# Not boot waits: the head's update timer (bin/update-head.sh) cuts each AWS or Slurm
# call off after this and retries it; the lock wait is part of SLURMCTLD_START_TIMEOUT.
SLURMCTLD_LOCK_WAIT = 600
HEAD_UPDATE_CALL_TIMEOUT = 60
HEAD_UPDATE_RETRIES = 3

# How often a compute node renews its launch hook while it boots.
HEARTBEAT_INTERVAL = 300


def boot_budget(role: Role) -> int:
    """The longest a healthy `role` node's bootstrap may take, in seconds."""
    waits = sum(poll.worst_case for poll in POLLS if role in poll.roles)
    retries = sum(retry.worst_case(role) for retry in RETRIES)
    build = SLURM_BUILD_ALLOWANCE if role == "head" else 0
    diagnostic = DCGM_JOIN_ALLOWANCE if role == "compute" else 0
    return waits + retries + WORK_ALLOWANCE + build + diagnostic


def heartbeat_timeout() -> int:
    """The compute launch hook's HeartbeatTimeout: the budget and a margin, within the API's range."""
    return max(MIN_HEARTBEAT_TIMEOUT, min(boot_budget("compute") + MARGIN, MAX_HEARTBEAT_TIMEOUT))


def global_timeout() -> int:
    return min(MAX_GLOBAL_TIMEOUT, GLOBAL_TIMEOUT_FACTOR * heartbeat_timeout())


def heartbeat_beats() -> int:
    """Heartbeats a compute node sends: the last one within its budget, so a hung boot is
    abandoned at most one HeartbeatTimeout after the budget is spent."""
    return boot_budget("compute") // HEARTBEAT_INTERVAL


def shell_values() -> dict[str, int]:
    """Every wait the bundle's scripts use, by the shell variable conf/cluster.sh defines."""
    values: dict[str, int] = {"RETRY_BACKOFF": RETRY_BACKOFF}
    for poll in POLLS:
        values[poll.name] = poll.timeout
        values[poll.name.replace("_TIMEOUT", "_POLL")] = poll.interval
        if poll.probe_name:
            values[poll.probe_name] = poll.probe
    for retry in RETRIES:
        values[retry.name] = retry.attempts
        if retry.command_timeout_name:
            values[retry.command_timeout_name] = retry.command_timeout
    values.update(
        SLURMCTLD_LOCK_WAIT=SLURMCTLD_LOCK_WAIT,
        HEAD_UPDATE_CALL_TIMEOUT=HEAD_UPDATE_CALL_TIMEOUT,
        HEAD_UPDATE_RETRIES=HEAD_UPDATE_RETRIES,
        HEARTBEAT_INTERVAL=HEARTBEAT_INTERVAL,
        HEARTBEAT_BEATS=heartbeat_beats(),
        BOOT_BUDGET=boot_budget("compute"),
    )
    return values


def _check() -> None:
    if boot_budget("compute") >= global_timeout():
        raise ValueError("the compute boot budget exceeds the lifecycle hook's global timeout")
    if heartbeat_timeout() <= HEARTBEAT_INTERVAL:
        raise ValueError("heartbeats must come more often than the hook's HeartbeatTimeout")
    head = next(poll for poll in POLLS if poll.name == "SLURMCTLD_START_TIMEOUT")
    if head.timeout <= SLURMCTLD_LOCK_WAIT:
        raise ValueError("the head must wait longer than slurmctld waits for its lock")


_check()

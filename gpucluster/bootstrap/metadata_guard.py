"""Only root reaches the instance metadata service (IMDS) on a node.

IMDS hands out the instance role's credentials, and every node role reads the munge key with
them: a user who could fetch them could forge a munge credential for any uid, root included.
So every node rejects connections to IMDS from processes of any other user, with an owner
rule in iptables' OUTPUT chain (as AWS ParallelCluster guards its head node). The bootstrap
runs the guard before any other step (lib/metadata.sh), and its unit runs it again at every
boot before the network comes up, so no login and no job ever finds IMDS open.

Root alone is enough: whatever calls IMDS on a node runs as root. The bootstrap and its
lifecycle heartbeats, the CloudWatch agent (run_as_user root, gpucluster.bootstrap.node_logs),
the SSM agent, the head's agents and the compute nodes' collector (units with User=root) and
the health check (slurmd runs it as root); slurmctld, slurmdbd and slurmrestd, under their own
users, never call it. Users' ECR pulls get their registry password from a root helper instead
(gpucluster.bootstrap.ecr_login).

An Enroot or Pyxis container shares the node's network namespace, and its root is the user's
uid outside its user namespace, so the rule rejects it as well; the launch templates' hop limit
of 1 keeps IMDS from containers with network namespaces of their own.

IPv4 only: the launch templates leave IMDS's IPv6 endpoint (fd00:ec2::254) off, which
tests/stacks/test_metadata_access.py holds them to; turning it on needs an ip6tables rule
here first.
"""

from __future__ import annotations

from gpucluster.rendering import render
from gpucluster.resolved import ResolvedCluster

METADATA_ADDRESS = "169.254.169.254/32"
CHAIN = "GPUCLUSTER_IMDS"
ALLOWED_UIDS = (0,)
# The Deep Learning AMI has it (Docker needs it); the guard installs it on an image without.
PACKAGE = "iptables"
SCRIPT = "/usr/local/sbin/gpucluster-imds-guard"
UNIT = "gpucluster-imds-guard.service"
UNIT_FILE = f"/etc/systemd/system/{UNIT}"
# Seconds iptables waits for another program's hold on the xtables lock (Docker's at boot).
LOCK_WAIT_SECONDS = 60


def rules() -> str:
    """The chain in iptables-restore's format: the allowed users go on through OUTPUT, everyone
    else is refused at once (REJECT, so a client fails fast instead of timing out)."""
    allowed = [f"-A {CHAIN} -m owner --uid-owner {uid} -j RETURN" for uid in ALLOWED_UIDS]
    return "\n".join(["*filter", f":{CHAIN} - [0:0]", *allowed, f"-A {CHAIN} -j REJECT", "COMMIT"]) + "\n"


def guard_files(resolved: ResolvedCluster) -> dict[str, str]:
    """The guard script and its boot unit, keyed by the absolute path every role installs them at."""
    values = {
        "cluster": resolved.name,
        "script": SCRIPT,
        "unit": UNIT,
        "rules": rules(),
        "address": METADATA_ADDRESS,
        "chain": CHAIN,
        "lock_wait": LOCK_WAIT_SECONDS,
    }
    return {
        SCRIPT: render("metadata/imds-guard.sh.j2", **values),
        UNIT_FILE: render("metadata/imds-guard.service.j2", **values),
    }


def bootstrap_settings() -> dict[str, str]:
    """What conf/cluster.sh tells lib/metadata.sh."""
    return {
        "script": SCRIPT,
        "unit": UNIT,
        "unit_file": UNIT_FILE,
        "package": PACKAGE,
        "address": METADATA_ADDRESS,
    }

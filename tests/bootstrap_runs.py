"""Running the rendered bootstrap on a simulated node (tests/shell_harness.py) and reading
the run: the example configs with fixture checksums, and what a run did to the instance's
lifecycle and to slurmd."""

from __future__ import annotations

from gpucluster.config import ClusterConfig, ComputeGroupConfig, OnDemandCapacity
from gpucluster.config.loader import load_config
from tests.conftest import REPO
from tests.shell_downloads import with_fixture_checksums
from tests.shell_harness import Node, Run

# Calls that change a node: none of them may happen on a second run.
CHANGING_CALLS = (
    "apt-get",
    "apt-mark hold",
    "mount ",
    "systemctl enable",
    "systemctl start",
    "systemctl restart",
    "systemctl daemon-reload",
    "hostnamectl",
    "make",
    "sysctl -p",
    "lnetctl net add",
    "modprobe",
    "aws --region us-east-1 autoscaling complete-lifecycle-action",
)


def example(name: str) -> ClusterConfig:
    return with_fixture_checksums(load_config(REPO / "examples" / f"{name}.yaml"))


def with_group(cfg: ClusterConfig, name: str, instance_type: str) -> ClusterConfig:
    group = ComputeGroupConfig(
        name=name, instance_type=instance_type, count=2, capacity=OnDemandCapacity(type="on-demand")
    )
    return cfg.model_copy(update={"compute_groups": [group]})


def abandoned(run: Run) -> bool:
    return any("--lifecycle-action-result ABANDON" in call for call in run.calls)


def continued(run: Run) -> bool:
    return any("--lifecycle-action-result CONTINUE" in call for call in run.calls)


def slurmd_started(run: Run) -> bool:
    return any(call in ("systemctl start slurmd", "systemctl restart slurmd") for call in run.calls)


def slurmd_dropin(node: Node) -> str:
    return (node.root / "etc/systemd/system/slurmd.service.d/gpucluster.conf").read_text()

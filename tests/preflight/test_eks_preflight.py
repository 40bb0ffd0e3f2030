"""preflight on EKS counts what an EKS cluster runs: the system node group in place of a head
and login instances (login nodes are pods there), and no Deep Learning AMI check."""

from __future__ import annotations

from pathlib import Path

from gpucluster.constructs_lib.eks.versions import SYSTEM_INSTANCE_TYPE, SYSTEM_NODE_COUNT
from tests.aws.preflight_aws import EXAMPLE, Aws, account_ready, aws, rows, run
from tests.conftest import REPO

__all__ = ["aws"]  # the fixture, imported to replace the StubbedAws one of conftest


def eks_config(tmp_path: Path) -> Path:
    """The EKS example on the default example's block (the one `Aws.reservation` describes)."""
    text = (REPO / "examples" / "p5-eks-slinky.yaml").read_text()
    block = text[text.index("      reservation_id:") : text.index("storage:")]
    default = EXAMPLE.read_text()
    ours = default[default.index("      reservation_id:") : default.index("storage:")]
    config = tmp_path / "eks.yaml"
    config.write_text(text.replace(block, ours))
    return config


def test_eks_counts_the_system_node_group_and_no_head_or_login_instances(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota(8.0)  # Standard: exactly the system group's 2 x 4 vCPUs
    result = run(eks_config(tmp_path))
    assert result.exit_code == 0, result.output
    table = rows(result.stdout)
    flat = " ".join(result.stdout.split())
    needed = f"system {SYSTEM_NODE_COUNT} x {SYSTEM_INSTANCE_TYPE} = {SYSTEM_NODE_COUNT * 4}"
    assert f"needed 8 ({needed})" in flat, flat
    assert "head" not in flat and "login" not in flat
    assert table[f"{SYSTEM_INSTANCE_TYPE} in AZ"].startswith("pass")
    # The EC2 defaults of head_node and login_nodes are not instance types this cluster runs.
    assert "m7i.2xlarge in AZ" not in table
    assert table["AMI"].startswith("pass") and "not used on EKS" in table["AMI"]


def test_the_ec2_path_still_counts_head_and_login(aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota()
    result = run()
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stdout.split())
    assert "head 1 x m7i.2xlarge = 8; login 1 x m7i.xlarge = 4" in flat

"""preflight's On-Demand vCPU quota rows: which quota each family counts under, ODCR nodes
counted, Capacity Block nodes not, the AWS default, and the fix for a short quota."""

from __future__ import annotations

from pathlib import Path

from gpucluster.preflight.quotas import family
from tests.aws.preflight_aws import EXAMPLE, Aws, account_ready, aws, odcr_config, rows, run

__all__ = ["aws"]  # the fixture, imported to replace the StubbedAws one of conftest


def test_instance_families_map_to_their_quota() -> None:
    assert [family(t) for t in ("p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "g6e.48xlarge")] == [
        "P",
        "P",
        "P",
        "G",
    ]
    assert [family(t) for t in ("vt1.3xlarge", "trn2.48xlarge", "inf2.48xlarge", "dl1.24xlarge")] == [
        "G",
        "Trn",
        "Inf",
        "DL",
    ]
    assert [family(t) for t in ("m7i.2xlarge", "c7i.large", "hpc7a.96xlarge", "x2idn.32xlarge")] == [
        "Standard",
        "Standard",
        "HPC",
        "X",
    ]
    assert family("u-6tb1.112xlarge") == "High Memory" and family("mac2.metal") == "Standard"
    assert family("") is None


def test_odcr_nodes_count_against_the_p_quota_with_its_fix(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation(ReservationType="default", State="active", StartDate=None, EndDate=None)
    # Quotas are read in the order of their family names: P, then Standard.
    # 2 x p5.48xlarge at 192 vCPUs each (the catalog's figure): 384 vCPUs, the quota allows 192.
    aws.quota(192.0, "L-417A185B")
    aws.quota()
    result = run(odcr_config(tmp_path))
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    assert table["quota P"].startswith("FAIL")
    assert table["reservation gpu"].startswith("pass") and table["quota Standard"].startswith("pass")
    flat = " ".join(result.stdout.split())
    assert "gpu 2 x p5.48xlarge = 384" in flat
    assert (
        "request an increase in Service Quotas: Running On-Demand P instances (L-417A185B) in "
        "us-east-2, to at least 384 vCPUs"
    ) in flat


def test_a_quota_never_applied_is_read_from_the_aws_default(tmp_path: Path, aws: Aws) -> None:
    account_ready()
    aws.reservation(ReservationType="default", State="active", StartDate=None, EndDate=None)
    aws.quota_stub.add_client_error(
        "get_service_quota",
        "NoSuchResourceException",
        "The request failed because the specified service quota does not exist.",
        expected_params={"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    aws.quota_stub.add_response(
        "get_aws_default_service_quota",
        {"Quota": {"QuotaCode": "L-417A185B", "Value": 384.0}},
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    aws.quota()
    result = run(odcr_config(tmp_path))
    assert result.exit_code == 0, result.output
    assert rows(result.stdout)["quota P"].startswith("pass")


def test_a_refused_quota_call_is_one_failed_row(aws: Aws) -> None:
    account_ready()
    aws.reservation()
    aws.quota_stub.add_client_error(
        "get_service_quota", "AccessDeniedException", "not authorized to perform GetServiceQuota"
    )
    result = run()
    assert result.exit_code == 1
    quota = rows(result.stdout)["quotas"]
    assert quota.startswith("FAIL") and "servicequotas:GetServiceQuota" in quota
    assert "Traceback" not in result.output


def test_an_instance_type_ec2_does_not_know_fails_the_quota_rows_with_its_message(
    tmp_path: Path, aws: Aws
) -> None:
    account_ready()
    aws.reservation()
    config = tmp_path / "typo.yaml"
    config.write_text(EXAMPLE.read_text().replace("instance_type: m7i.2xlarge", "instance_type: m7q.2xlarge"))
    result = run(config)
    assert result.exit_code == 1, result.output
    table = rows(result.stdout)
    assert table["quotas"].startswith("FAIL") and "ec2:DescribeInstanceTypes" in table["quotas"]
    assert table["m7q.2xlarge in AZ"].startswith("FAIL")

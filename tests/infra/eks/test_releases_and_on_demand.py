"""The EKS stack's Helm releases (where the Slinky charts plug in) and on-demand node groups."""

from __future__ import annotations

import copy

import aws_cdk as cdk
import yaml

from gpucluster.config.loader import parse_config
from gpucluster.infra.eks.eks_stack import EksStack, HelmRelease
from gpucluster.resolved import resolve
from tests.conftest import REPO, resources_of

EKS = yaml.safe_load((REPO / "examples" / "p5-eks-slinky.yaml").read_text())


def eks_template(releases=(), change=lambda d: None, fsx=False):
    data = copy.deepcopy(EKS)
    change(data)
    resolved = resolve(parse_config(yaml.safe_dump(data), "c.yaml"))
    app = cdk.App()
    stack = EksStack(
        app,
        "eks",
        resolved=resolved,
        vpc_id="vpc-0123456789abcdef0",
        subnet_id="subnet-0123456789abcdef0",
        control_plane_subnet_ids=["subnet-0123456789abcdef1", "subnet-0123456789abcdef2"],
        nodes_security_group_id="sg-0123456789abcdef0",
        efa_security_group_id="sg-0123456789abcdef1",
        releases=releases,
        env=cdk.Environment(region="us-east-2"),
    )
    facts = stack.fsx_facts() if fsx else None
    return app.synth().get_stack_by_name("eks").template, facts


def test_helm_releases_install_in_order_with_their_values(tmp_path):
    charts = []
    for name in ("crds", "operator"):
        chart = tmp_path / name
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n")
        charts.append(
            HelmRelease(id=name.title(), chart_dir=chart, release=name, namespace="slinky", values={"x": 1})
        )
    template, _ = eks_template(charts)
    found = resources_of(template, "Custom::AWSCDK-EKS-HelmChart")
    by_release = {r["Properties"]["Release"]: (logical, r) for logical, r in found.items()}
    assert set(by_release) == {"crds", "operator"}
    logical_crds, _ = by_release["crds"]
    _, operator = by_release["operator"]
    assert logical_crds in operator["DependsOn"]
    assert yaml.safe_load(operator["Properties"]["Values"]) == {"x": 1}
    assert operator["Properties"]["Namespace"] == "slinky"
    assert resources_of(template, "AWS::Lambda::LayerVersion")  # the kubectl/helm layer


def test_on_demand_group_runs_count_nodes_without_a_block():
    def change(d):
        d["compute_groups"][0]["capacity"] = {"type": "on-demand"}

    template, _ = eks_template(change=change)
    [node_group] = [
        r["Properties"]
        for logical, r in resources_of(template, "AWS::EKS::Nodegroup").items()
        if logical.startswith("Compute")
    ]
    assert node_group["CapacityType"] == "ON_DEMAND"
    assert node_group["ScalingConfig"] == {"DesiredSize": 2, "MaxSize": 2, "MinSize": 2}
    [launch] = [
        r["Properties"]["LaunchTemplateData"]
        for r in resources_of(template, "AWS::EC2::LaunchTemplate").values()
        if "NetworkInterfaces" in r["Properties"]["LaunchTemplateData"]
    ]
    assert "InstanceMarketOptions" not in launch and "CapacityReservationSpecification" not in launch


def test_fsx_facts_come_from_the_storage_stacks_parameters():
    template, facts = eks_template(fsx=True)
    parameters = {p["Default"] for p in template["Parameters"].values() if "Default" in p}
    assert "/gpucluster/p5eks/storage/fsx_dns_name" in parameters
    assert "/gpucluster/p5eks/storage/fsx_mount_name" in parameters
    assert facts is not None and cdk.Token.is_unresolved(facts.file_system_id)

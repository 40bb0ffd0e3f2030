"""The EKS stack's Helm releases (where the Slinky charts plug in) and on-demand node groups."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
import yaml

from gpucluster.config.loader import parse_config
from gpucluster.resolved import resolve
from gpucluster.stacks.eks_stack import EksStack, HelmRelease
from gpucluster.synth.nag import check
from tests.conftest import REPO, resources_of

EKS = yaml.safe_load((REPO / "examples" / "p5-eks-slinky.yaml").read_text())


def eks_app(releases=(), change=lambda d: None, fsx=False, outdir=None):
    data = copy.deepcopy(EKS)
    change(data)
    resolved = resolve(parse_config(yaml.safe_dump(data), "c.yaml"))
    app = cdk.App(outdir=outdir)
    stack = EksStack(
        app,
        "eks",
        resolved=resolved,
        vpc_id="vpc-0123456789abcdef0",
        subnet_id="subnet-0123456789abcdef0",
        control_plane_subnet_ids=["subnet-0123456789abcdef1", "subnet-0123456789abcdef2"],
        nodes_security_group_id="sg-0123456789abcdef0",
        efa_security_group_id="sg-0123456789abcdef1",
        with_kubectl=bool(releases),
        env=cdk.Environment(region="us-east-2"),
    )
    for release in releases:
        stack.add_helm_release(release)
    facts = stack.fsx_facts() if fsx else None
    return app, facts


def eks_template(releases=(), change=lambda d: None, fsx=False):
    app, facts = eks_app(releases, change, fsx)
    return app.synth().get_stack_by_name("eks").template, facts


def releases(root):
    charts = []
    for name in ("crds", "operator"):
        chart = root / name
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text(f"apiVersion: v2\nname: {name}\nversion: 1.0.0\n")
        charts.append(
            HelmRelease(id=name.title(), chart_dir=chart, release=name, namespace="slinky", values={"x": 1})
        )
    return charts


def test_helm_releases_install_in_order_with_their_values(tmp_path):
    charts = releases(tmp_path)
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
    written = resolve(parse_config(yaml.safe_dump(EKS), "c.yaml")).names.storage_parameters
    assert {written["fsx_dns_name"], written["fsx_mount_name"]} <= parameters
    assert facts is not None and cdk.Token.is_unresolved(facts.file_system_id)


def test_with_releases_the_stack_is_nag_and_cfn_lint_clean(tmp_path):
    app, _ = eks_app(releases(tmp_path / "charts"), outdir=str(tmp_path / "out"))
    assembly = Path(app.synth().directory)
    check(assembly)  # NagFindings on any unacknowledged finding of the kubectl provider
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    run = subprocess.run(
        [str(cfn_lint), "--format", "parseable", str(assembly / "eks.template.json")],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_release_needs_a_stack_built_with_kubectl(tmp_path):
    app, _ = eks_app()
    stack = app.node.find_child("eks")
    assert isinstance(stack, EksStack)
    with pytest.raises(ValueError, match="with_kubectl"):
        stack.add_helm_release(releases(tmp_path)[0])

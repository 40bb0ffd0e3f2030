"""The EKS stack's wiring around its releases: the objects it applies carry the Storage
stack's real FSx facts (and k8s/ the same objects with placeholders), slurmdbd's host comes
from its SSM parameter, the kubectl provider runs where it can reach AWS, and the add-ons that
need nodes wait for them."""

from __future__ import annotations

import json

import yaml

from gpucluster.config.loader import parse_config
from gpucluster.eks import manifests
from gpucluster.eks.storage import FsxFacts, placeholder_facts
from gpucluster.resolved import resolve
from tests.conftest import resources_of
from tests.eks_examples import EKS_EXAMPLE, eks_example_data, with_database
from tests.stacks.eks_software_values import by_release, slurm_objects

# What the Storage stack's SSM parameters hold after its deploy, standing in for them.
DNS = "fs-0123456789abcdef0.fsx.us-east-2.amazonaws.com"
MOUNT = "abcdefgh"


def resolve_intrinsics(value, refs):
    """Just enough of CloudFormation's intrinsic functions for the manifest's tokens."""
    if isinstance(value, list):
        return [resolve_intrinsics(v, refs) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"Ref"}:
        return refs[value["Ref"]]
    if set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(resolve_intrinsics(p, refs) for p in parts)
    if set(value) == {"Fn::Select"}:
        index, items = value["Fn::Select"]
        return resolve_intrinsics(items, refs)[index]
    if set(value) == {"Fn::Split"}:
        separator, text = value["Fn::Split"]
        return resolve_intrinsics(text, refs).split(separator)
    return {k: resolve_intrinsics(v, refs) for k, v in value.items()}


def test_objects_carry_the_storage_stacks_real_fsx_facts(eks_template, eks_example_resolved):
    parameters = eks_example_resolved.names.storage_parameters
    by_parameter = {
        parameters["fsx_dns_name"]: DNS,
        parameters["fsx_mount_name"]: MOUNT,
    }
    refs = {
        logical: by_parameter[p["Default"]]
        for logical, p in eks_template["Parameters"].items()
        if p.get("Default") in by_parameter
    }
    assert len(refs) == 2, "the manifest reads both SSM parameters"
    _, manifest = slurm_objects(eks_template)
    applied = json.loads(resolve_intrinsics(manifest["Properties"]["Manifest"], refs))
    for doc in applied:
        doc["metadata"].pop("labels")  # CDK's prune label
    facts = FsxFacts(file_system_id="fs-0123456789abcdef0", dns_name=DNS, mount_name=MOUNT)
    assert applied == manifests.objects(eks_example_resolved, facts)
    [volume] = [doc for doc in applied if doc["kind"] == "PersistentVolume"]
    assert volume["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
    assert "${" not in json.dumps(applied)


def test_the_k8s_folder_writes_the_same_objects_with_placeholders(eks_synthesized, eks_example_resolved):
    written = (eks_synthesized[EKS_EXAMPLE].outdir / "k8s" / "objects.yaml").read_text()
    docs = [doc for doc in yaml.safe_load_all(written) if doc]
    assert docs == manifests.objects(eks_example_resolved, placeholder_facts(eks_example_resolved))


def test_with_a_database_slurmdbd_reads_its_host_from_the_ssm_parameter_at_deploy(eks_database_template):
    cfg = parse_config(yaml.safe_dump(eks_example_data(with_database)), "c.yaml")
    host_parameter = resolve(cfg).accounting.database.host_parameter
    eks = eks_database_template
    [logical] = [logical for logical, p in eks["Parameters"].items() if p.get("Default") == host_parameter]
    _, slurm = by_release(eks)["slurm"]
    values = json.loads(resolve_intrinsics(slurm["Properties"]["Values"], {logical: "db.example.internal"}))
    assert values["accounting"]["storageConfig"]["host"] == "db.example.internal"
    assert "${ssm:" not in json.dumps(values)


def routes_out(network, subnet_logical):
    """(NAT default route, S3 gateway endpoint) of the subnet's route table in the Network stack."""
    [table] = [
        r["Properties"]["RouteTableId"]["Ref"]
        for r in resources_of(network, "AWS::EC2::SubnetRouteTableAssociation").values()
        if r["Properties"]["SubnetId"] == {"Ref": subnet_logical}
    ]
    nat = any(
        r["Properties"]["RouteTableId"] == {"Ref": table}
        and r["Properties"].get("DestinationCidrBlock") == "0.0.0.0/0"
        and "NatGatewayId" in r["Properties"]
        for r in resources_of(network, "AWS::EC2::Route").values()
    )
    s3 = any(
        {"Ref": table} in r["Properties"].get("RouteTableIds", [])
        for r in resources_of(network, "AWS::EC2::VPCEndpoint").values()
    )
    return nat, s3


def test_the_kubectl_provider_runs_where_it_can_reach_aws_apis_and_s3(eks_synthesized, eks_template):
    """Its functions call the EKS and Lambda APIs, read the chart assets from S3 and answer
    CloudFormation's S3 response URL: the subnet they run in needs NAT and the S3 endpoint
    (the control plane's subnets, aws_eks_v2's default, have neither)."""
    [network] = [t for name, t in eks_synthesized[EKS_EXAMPLE].templates.items() if name.endswith("-network")]
    exports = {
        o["Export"]["Name"]: o["Value"].get("Ref") for o in network["Outputs"].values() if "Export" in o
    }
    functions = {
        logical: f
        for logical, f in resources_of(eks_template, "AWS::Lambda::Function").items()
        if logical.startswith("ClusterKubectlProvider")
    }
    assert len(functions) == 2  # the kubectl handler and its framework's onEvent
    for logical, function in functions.items():
        for subnet in function["Properties"]["VpcConfig"]["SubnetIds"]:
            assert routes_out(network, exports[subnet["Fn::ImportValue"]]) == (True, True), logical


def test_add_ons_that_run_deployments_wait_for_the_system_nodes(eks_template):
    """coredns, the CSI controllers and cert-manager stay short of ACTIVE without a node to run
    on; the DaemonSet-only add-ons may go first (the nodes need the CNI)."""
    [system] = [
        logical
        for logical in resources_of(eks_template, "AWS::EKS::Nodegroup")
        if logical.startswith("System")
    ]
    after = {
        r["Properties"]["AddonName"]: system in r.get("DependsOn", [])
        for r in resources_of(eks_template, "AWS::EKS::Addon").values()
    }
    assert after == {
        "vpc-cni": False,
        "kube-proxy": False,
        "eks-pod-identity-agent": False,
        "coredns": True,
        "aws-ebs-csi-driver": True,
        "cert-manager": True,
        "aws-fsx-csi-driver": True,
    }


def test_every_add_on_overwrites_what_eks_installed_with_the_cluster(eks_template):
    """EKS bootstraps vpc-cni, kube-proxy and coredns itself; an add-on created over them with
    CloudFormation's default (NONE) fails on the first field its version sets differently."""
    add_ons = resources_of(eks_template, "AWS::EKS::Addon").values()
    assert {a["Properties"]["AddonName"] for a in add_ons} >= {"vpc-cni", "kube-proxy", "coredns"}
    assert {a["Properties"]["AddonName"]: a["Properties"].get("ResolveConflicts") for a in add_ons} == {
        a["Properties"]["AddonName"]: "OVERWRITE" for a in add_ons
    }

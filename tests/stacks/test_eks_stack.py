"""orchestrator: eks builds an EKS cluster (aws_eks_v2) in the Network stack's VPC, a system
node group, a managed node group per compute group on the EC2 path's EFA launch template, and
pinned add-ons; the Storage stack is the EC2 path's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster.config.loader import load_config
from gpucluster.constructs_lib.eks.versions import (
    ADD_ONS,
    CLUSTER_ADD_ONS,
    KUBERNETES_VERSION,
    POD_IDENTITY_AGENT,
)
from gpucluster.resolved import resolve
from gpucluster.synth.app import synthesize
from tests.conftest import EKS_EXAMPLES, REPO, resources_of

EXAMPLE = "p5-eks-slinky"


def templates(eks_synthesized, example=EXAMPLE):
    return {name.rsplit("-", 1)[1]: t for name, t in eks_synthesized[example].templates.items()}


def only(template, kind):
    [found] = resources_of(template, kind).values()
    return found["Properties"]


def gpu_node_groups(template):
    return {
        logical: res["Properties"]
        for logical, res in resources_of(template, "AWS::EKS::Nodegroup").items()
        if logical.startswith("Compute")
    }


def test_the_example_is_an_eks_example():
    assert [path.stem for path in EKS_EXAMPLES] == [EXAMPLE]


def test_network_storage_and_eks_stacks_and_no_ec2_head(eks_synthesized):
    found = templates(eks_synthesized)
    assert set(found) == {"network", "storage", "eks"}
    assert not resources_of(found["eks"], "AWS::EC2::Instance")
    assert not resources_of(found["eks"], "AWS::AutoScaling::AutoScalingGroup")


def test_the_storage_stack_is_the_ec2_paths(eks_synthesized):
    storage = templates(eks_synthesized)["storage"]
    [fsx] = resources_of(storage, "AWS::FSx::FileSystem").values()
    assert fsx["DeletionPolicy"] == "Retain"


def test_cluster_version_logging_and_two_zone_control_plane(eks_synthesized):
    found = templates(eks_synthesized)
    cluster = only(found["eks"], "AWS::EKS::Cluster")
    assert cluster["Version"] == KUBERNETES_VERSION
    assert len(cluster["Logging"]["ClusterLogging"]["EnabledTypes"]) == 5
    subnet_ids = cluster["ResourcesVpcConfig"]["SubnetIds"]
    assert len(subnet_ids) == 2
    zones = {
        res["Properties"]["AvailabilityZone"]
        for logical, res in resources_of(found["network"], "AWS::EC2::Subnet").items()
        if logical.startswith("DatabaseSubnet")
    }
    assert zones == {"us-east-2a", "us-east-2b"}


def test_capacity_block_node_group_uses_our_efa_launch_template(eks_synthesized):
    cfg = load_config(REPO / "examples" / f"{EXAMPLE}.yaml")
    group = resolve(cfg).group("h100")
    eks = templates(eks_synthesized)["eks"]
    [node_group] = gpu_node_groups(eks).values()
    assert node_group["CapacityType"] == "CAPACITY_BLOCK"
    assert node_group["AmiType"] == "AL2023_x86_64_NVIDIA"
    assert node_group["ScalingConfig"] == {"DesiredSize": 0, "MaxSize": 2, "MinSize": 0}
    assert node_group["Labels"] == {"gpucluster.io/compute-group": "h100"}
    assert node_group["Taints"] == [{"Effect": "NO_SCHEDULE", "Key": "nvidia.com/gpu", "Value": "h100"}]
    assert "InstanceTypes" not in node_group  # the launch template names the type
    template_id = node_group["LaunchTemplate"]["Id"]["Ref"]
    data = eks["Resources"][template_id]["Properties"]["LaunchTemplateData"]
    assert data["InstanceType"] == "p5.48xlarge"
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    reservation = data["CapacityReservationSpecification"]["CapacityReservationTarget"]
    assert reservation == {"CapacityReservationId": cfg.compute_groups[0].capacity.reservation_id}
    # EKS supplies image, role and bootstrap; a managed node group refuses an instance profile.
    assert not {"ImageId", "IamInstanceProfile", "UserData"} & set(data)
    assert data["BlockDeviceMappings"][0]["DeviceName"] == "/dev/xvda"
    layout = [
        (i["NetworkCardIndex"], i["DeviceIndex"], i.get("InterfaceType", "interface"))
        for i in data["NetworkInterfaces"]
    ]
    assert layout == [(s.network_card_index, s.device_index, s.interface_type) for s in group.interfaces]
    assert len([i for i in data["NetworkInterfaces"] if i.get("InterfaceType") == "efa-only"]) == 32
    for interface in data["NetworkInterfaces"]:
        assert "SubnetId" not in interface
        groups = interface["Groups"]
        assert len(groups) == 3  # the EKS cluster's, the nodes' and the EFA group
        assert {"Fn::GetAtt": ["ClusterEB0386A7", "ClusterSecurityGroupId"]} in groups


def test_gpu_and_system_nodes_live_in_the_node_subnet(eks_synthesized):
    eks = templates(eks_synthesized)["eks"]
    for node_group in resources_of(eks, "AWS::EKS::Nodegroup").values():
        [subnet] = node_group["Properties"]["Subnets"]
        assert "NodeSubnet" in subnet["Fn::ImportValue"]


def test_every_node_group_serves_metadata_to_pods_one_hop_further(eks_synthesized):
    """Pods have network namespaces of their own, and the EBS CSI driver's node pods read the
    instance from IMDS (launch_settings.POD_METADATA_HOPS); IMDSv2 only, as on the EC2 path."""
    eks = templates(eks_synthesized)["eks"]
    node_groups = resources_of(eks, "AWS::EKS::Nodegroup").values()
    for node_group in node_groups:
        template_id = node_group["Properties"]["LaunchTemplate"]["Id"]["Ref"]
        options = eks["Resources"][template_id]["Properties"]["LaunchTemplateData"]["MetadataOptions"]
        assert options["HttpPutResponseHopLimit"] == 2
        assert options["HttpTokens"] == "required"
    assert len(node_groups) == 2  # the system group and the example's one compute group


def test_system_node_group_is_small_and_on_demand(eks_synthesized):
    eks = templates(eks_synthesized)["eks"]
    [system] = [
        p["Properties"]
        for logical, p in resources_of(eks, "AWS::EKS::Nodegroup").items()
        if logical.startswith("System")
    ]
    assert system["CapacityType"] == "ON_DEMAND"
    assert system["ScalingConfig"]["DesiredSize"] == 2
    assert "Taints" not in system


def test_add_ons_are_pinned(eks_synthesized):
    eks = templates(eks_synthesized)["eks"]
    found = {
        p["Properties"]["AddonName"]: p["Properties"] for p in resources_of(eks, "AWS::EKS::Addon").values()
    }
    assert {name: p["AddonVersion"] for name, p in found.items()} == {
        **ADD_ONS,
        **CLUSTER_ADD_ONS,
        "eks-pod-identity-agent": POD_IDENTITY_AGENT,
    }
    [association] = found["aws-ebs-csi-driver"]["PodIdentityAssociations"]
    assert association["ServiceAccount"] == "ebs-csi-controller-sa"


def test_the_cluster_kube_proxy_kubectl_and_manifest_schemas_share_one_minor():
    """kube-proxy is built per minor; kubectl (the layer's) and the schemas the manifests are
    checked against must be the cluster's minor too, not one left behind by an upgrade."""
    from tests.eks.schemas import KUBERNETES_VERSION as SCHEMA_VERSION

    assert ADD_ONS["kube-proxy"].startswith(f"v{KUBERNETES_VERSION}.")
    assert (
        "lambda_layer_kubectl_v" + KUBERNETES_VERSION.split(".")[1]
        in (REPO / "constructs_lib" / "eks" / "kubectl.py").read_text()
    )
    assert SCHEMA_VERSION.startswith(f"{KUBERNETES_VERSION}.")


def test_the_eks_app_has_the_kubectl_provider_that_installs_its_charts(eks_synthesized):
    eks = templates(eks_synthesized)["eks"]
    assert resources_of(eks, "AWS::Lambda::LayerVersion")
    assert resources_of(eks, "Custom::AWSCDK-EKS-HelmChart")


def test_cfn_lint_is_clean(eks_synthesized):
    result = eks_synthesized[EXAMPLE]
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    files = [str(result.template_path(name)) for name in result.templates]
    run = subprocess.run([str(cfn_lint), "--format", "parseable", *files], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_synth_is_deterministic(tmp_path, eks_synthesized):
    again = synthesize(load_config(REPO / "examples" / f"{EXAMPLE}.yaml"), tmp_path / "again")
    assert again.templates == eks_synthesized[EXAMPLE].templates


@pytest.mark.parametrize(
    "module", ["aws_cdk.aws_eks_v2", "gpucluster.constructs_lib.eks", "gpucluster.stacks.eks_stack"]
)
def test_the_default_synth_never_imports_eks(module, tmp_path):
    code = (
        "import sys\n"
        "from gpucluster.config.loader import load_config\n"
        "from gpucluster.synth.app import synthesize\n"
        f"synthesize(load_config({str(REPO / 'examples' / 'default.yaml')!r}), {str(tmp_path)!r})\n"
        f"assert {module!r} not in sys.modules, 'imported'\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]


def test_synth_writes_the_slinky_manifests_beside_the_templates(eks_synthesized):
    """`gpucluster synth` of an EKS config writes what render_manifests renders into k8s/,
    byte for byte, so CI can diff the manifests like the templates."""
    from gpucluster.eks.manifests import render_manifests
    from gpucluster.synth.app import K8S_DIR

    result = eks_synthesized["p5-eks-slinky"]
    expected = render_manifests(resolve(load_config(REPO / "examples" / "p5-eks-slinky.yaml")))
    written = {
        str(path.relative_to(result.outdir / K8S_DIR)): path.read_text()
        for path in (result.outdir / K8S_DIR).rglob("*")
        if path.is_file()
    }
    assert written == expected and "values/slurm-v1.2.1.yaml" in written


def test_an_ec2_synth_writes_no_manifests(synthesized):
    assert not (synthesized["default"].outdir / "k8s").exists()

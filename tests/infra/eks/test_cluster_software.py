"""What the EKS stack installs into the cluster (gpucluster.infra.eks.cluster_software): the
device plugins, the vendored Slinky charts as chart assets, the objects with the Storage
stack's real FSx facts, in that order, with the values and objects synth writes to k8s/."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from gpucluster.config.loader import load_config, parse_config
from gpucluster.eks import device_plugins, manifests, slinky_values
from gpucluster.eks.storage import FsxFacts, placeholder_facts
from gpucluster.infra.eks.cluster_software import EFA_CHART, NVIDIA_CHART
from gpucluster.infra.eks.versions import CERT_MANAGER
from gpucluster.resolved import resolve
from gpucluster.synth.app import build_app
from tests.conftest import REPO, resources_of
from tests.eks.helm import CHARTS, Helm, extract_helm
from tests.infra.eks.test_eks_stack import EXAMPLE, templates

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
# What the Storage stack's SSM parameters hold after its deploy, standing in for them.
DNS = "fs-0123456789abcdef0.fsx.us-east-2.amazonaws.com"
MOUNT = "abcdefgh"


@pytest.fixture(scope="module")
def resolved():
    return resolve(load_config(REPO / "examples" / f"{EXAMPLE}.yaml"))


@pytest.fixture(scope="module")
def eks(eks_synthesized):
    return templates(eks_synthesized)["eks"]


def by_release(template):
    return {r["Properties"]["Release"]: (logical, r) for logical, r in resources_of(template, HELM).items()}


def values_of(resource):
    return json.loads(resource["Properties"]["Values"])


def test_everything_installs_in_one_chain_after_the_nodes_and_add_ons(eks):
    releases = by_release(eks)
    [(objects, _)] = resources_of(eks, MANIFEST).items()
    order = [
        releases["nvidia-device-plugin"][0],
        releases["aws-efa-k8s-device-plugin"][0],
        releases["slurm-operator-crds"][0],
        releases["slurm-operator"][0],
        objects,
        releases["slurm"][0],
    ]
    for before, after in zip(order, order[1:], strict=False):
        assert before in eks["Resources"][after]["DependsOn"], (before, after)
    first = set(eks["Resources"][order[0]]["DependsOn"])
    assert set(resources_of(eks, "AWS::EKS::Addon")) <= first
    assert any(logical.startswith("SystemNodeGroup") for logical in first)


def test_the_operator_waits_for_the_cert_manager_add_on(eks):
    [cert_manager] = [
        logical
        for logical, r in resources_of(eks, "AWS::EKS::Addon").items()
        if r["Properties"]["AddonName"] == CERT_MANAGER
    ]
    _, operator = by_release(eks)["slurm-operator"]
    assert cert_manager in operator["DependsOn"]


def test_the_operator_charts_webhook_uses_cert_manager_by_default():
    # Why cert-manager is installed at all: the vendored chart's default.
    values = yaml.safe_load((CHARTS / "slurm-operator" / "values.yaml").read_text())
    assert values["certManager"]["enabled"] is True
    assert "certManager" not in slinky_values.operator_values()


def test_device_plugins_are_vendored_chart_assets_with_our_values(eks_synthesized, eks, resolved):
    result = eks_synthesized[EXAMPLE]
    releases = by_release(eks)
    for release, vendored, expected in (
        ("nvidia-device-plugin", NVIDIA_CHART, device_plugins.nvidia_values()),
        ("aws-efa-k8s-device-plugin", EFA_CHART, device_plugins.efa_values(resolved)),
    ):
        resource = releases[release][1]
        assert not {"Repository", "Chart", "Version"} & set(resource["Properties"]), (
            "nothing pulled at deploy"
        )
        staged = asset_dir(result, resource)
        assert (staged / "Chart.yaml").read_bytes() == (vendored / "Chart.yaml").read_bytes()
        assert values_of(resource) == expected
    efa = values_of(releases["aws-efa-k8s-device-plugin"][1])
    assert efa["supportedInstanceLabels"]["values"] == ["p5.48xlarge"]


def tolerates(tolerations, taint):
    for toleration in tolerations:
        if toleration["key"] != taint["Key"] or toleration.get("effect") not in (None, "NoSchedule"):
            continue
        if toleration["operator"] == "Exists" or toleration.get("value") == taint["Value"]:
            return True
    return False


def test_device_plugins_run_on_the_tainted_gpu_node_groups(eks):
    node_groups = [
        r["Properties"]
        for logical, r in resources_of(eks, "AWS::EKS::Nodegroup").items()
        if logical.startswith("Compute")
    ]
    assert node_groups
    releases = by_release(eks)
    for release in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin"):
        tolerations = values_of(releases[release][1])["tolerations"]
        for node_group in node_groups:
            for taint in node_group["Taints"]:
                assert tolerates(tolerations, taint), (release, taint)
    # The NVIDIA plugin's affinity selects exactly the label the GPU node groups carry.
    [term] = values_of(releases["nvidia-device-plugin"][1])["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    [expression] = term["matchExpressions"]
    assert all(expression["key"] in node_group["Labels"] for node_group in node_groups)


def test_a_cluster_without_efa_gets_no_efa_plugin(resolved):
    assert device_plugins.efa_instance_types(resolved) == ["p5.48xlarge"]
    data = yaml.safe_load((REPO / "examples" / f"{EXAMPLE}.yaml").read_text())
    data["compute_groups"][0] |= {
        "instance_type": "g5.12xlarge",
        "efa": False,
        "capacity": {"type": "on-demand"},
    }
    assert device_plugins.efa_instance_types(resolve(parse_config(yaml.safe_dump(data), "c.yaml"))) == []


def without_nulls(value):
    """CDK drops null values when it writes Values; the charts' defaults for those keys
    (image digests) are null too, so helm sees the same."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def test_slurm_values_are_the_generated_ones_with_the_nodesets(eks, resolved):
    _, slurm = by_release(eks)["slurm"]
    values = values_of(slurm)
    assert values == without_nulls(slinky_values.slurm_values(resolved))
    assert set(values["nodesets"]) == {"h100"}
    _, operator = by_release(eks)["slurm-operator"]
    assert values_of(operator) == slinky_values.operator_values()
    assert slurm["Properties"]["Namespace"] == "slurm"


def asset_dir(result, resource):
    url = resource["Properties"]["ChartAssetURL"]["Fn::Sub"]
    digest = url.rsplit("/", 1)[1].removesuffix(".zip")
    return result.outdir / f"asset.{digest}"


def test_slinky_charts_are_chart_assets_of_the_vendored_charts(eks_synthesized, eks):
    result = eks_synthesized[EXAMPLE]
    releases = by_release(eks)
    for release in ("slurm-operator-crds", "slurm-operator", "slurm"):
        properties = releases[release][1]["Properties"]
        assert not {"Repository", "Chart", "Version"} & set(properties), "nothing pulled at deploy"
        staged = asset_dir(result, releases[release][1])
        for vendored in (CHARTS / release).rglob("*"):
            if vendored.is_file():
                relative = vendored.relative_to(CHARTS / release)
                assert (staged / relative).read_bytes() == vendored.read_bytes(), relative
    operator = asset_dir(result, releases["slurm-operator"][1])
    subchart = operator / "charts" / "slurm-operator-crds"
    assert (subchart / "Chart.yaml").read_bytes() == (
        CHARTS / "slurm-operator-crds" / "Chart.yaml"
    ).read_bytes()


@pytest.fixture(scope="module")
def asset_helm(tmp_path_factory):
    work = tmp_path_factory.mktemp("asset-helm")
    return Helm(extract_helm(work), work)


def test_real_helm_renders_each_staged_asset_as_deployed(eks_synthesized, eks, asset_helm, tmp_path):
    """helm template on the very directories CDK uploads, with the values the template passes
    (no `helm dependency build`: the kubectl provider runs none, so the operator's subchart
    must already be in the asset)."""
    result = eks_synthesized[EXAMPLE]
    rendered = {}
    for release, (_, resource) in by_release(eks).items():
        if "ChartAssetURL" not in resource["Properties"]:
            continue
        chart = tmp_path / release
        shutil.copytree(asset_dir(result, resource), chart)
        values = tmp_path / f"{release}.json"
        values.write_text(resource["Properties"].get("Values", "{}"))
        out = asset_helm.run(
            "template",
            release,
            str(chart),
            "--namespace",
            resource["Properties"]["Namespace"],
            "--values",
            str(values),
        )
        rendered[release] = [doc for doc in yaml.safe_load_all(out) if doc]
    assert {doc["kind"] for doc in rendered["slurm-operator-crds"]} == {"CustomResourceDefinition"}
    assert "Certificate" in {doc["kind"] for doc in rendered["slurm-operator"]}
    assert not [doc for doc in rendered["slurm-operator"] if doc["kind"] == "CustomResourceDefinition"]
    nodesets = [doc for doc in rendered["slurm"] if doc["kind"] == "NodeSet"]
    assert [n["metadata"]["name"] for n in nodesets] == ["slurm-worker-h100"]
    # The device plugins' DaemonSets land on the GPU nodes: our affinity replaced the NVIDIA
    # chart's (which wants node-feature-discovery labels EKS nodes lack), the EFA chart selects
    # the cluster's EFA instance types, and both tolerate the groups' taint.
    nvidia_pods = [
        d["spec"]["template"]["spec"] for d in rendered["nvidia-device-plugin"] if d["kind"] == "DaemonSet"
    ]
    [efa] = [d for d in rendered["aws-efa-k8s-device-plugin"] if d["kind"] == "DaemonSet"]
    efa_pod = efa["spec"]["template"]["spec"]
    # Two DaemonSets: the plugin, and MPS's control daemon (which selects only MPS nodes).
    assert len(nvidia_pods) == 2
    for pod in nvidia_pods:
        [term] = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert term["matchExpressions"] == [{"key": "gpucluster.io/compute-group", "operator": "Exists"}]
    [term] = efa_pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]} in term[
        "matchExpressions"
    ]
    for pod in (*nvidia_pods, efa_pod):
        assert tolerates(pod["tolerations"], {"Key": "nvidia.com/gpu", "Value": "h100"})


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


def test_objects_carry_the_storage_stacks_real_fsx_facts(eks, resolved):
    parameters = resolved.names.storage_parameters
    by_parameter = {
        parameters["fsx_dns_name"]: DNS,
        parameters["fsx_mount_name"]: MOUNT,
    }
    refs = {
        logical: by_parameter[p["Default"]]
        for logical, p in eks["Parameters"].items()
        if p.get("Default") in by_parameter
    }
    assert len(refs) == 2, "the manifest reads both SSM parameters"
    [manifest] = resources_of(eks, MANIFEST).values()
    applied = json.loads(resolve_intrinsics(manifest["Properties"]["Manifest"], refs))
    for doc in applied:
        doc["metadata"].pop("labels")  # CDK's prune label
    facts = FsxFacts(file_system_id="fs-0123456789abcdef0", dns_name=DNS, mount_name=MOUNT)
    assert applied == manifests.objects(resolved, facts)
    [volume] = [doc for doc in applied if doc["kind"] == "PersistentVolume"]
    assert volume["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
    assert "${" not in json.dumps(applied)


def test_the_k8s_folder_writes_the_same_objects_with_placeholders(eks_synthesized, resolved):
    written = (eks_synthesized[EXAMPLE].outdir / "k8s" / "objects.yaml").read_text()
    docs = [doc for doc in yaml.safe_load_all(written) if doc]
    assert docs == manifests.objects(resolved, placeholder_facts(resolved))


def test_with_a_database_slurmdbd_reads_its_host_from_the_ssm_parameter_at_deploy(tmp_path):
    data = yaml.safe_load((REPO / "examples" / f"{EXAMPLE}.yaml").read_text())
    data["accounting"] = {"database": {"instance_class": "db.t4g.small", "storage_gib": 20}}
    cfg = parse_config(yaml.safe_dump(data), "c.yaml")
    host_parameter = resolve(cfg).accounting.database.host_parameter
    assembly = build_app(cfg, outdir=str(tmp_path)).synth()
    eks = assembly.get_stack_by_name(f"{cfg.name}-eks").template
    [(logical, _)] = [
        (logical, p) for logical, p in eks["Parameters"].items() if p.get("Default") == host_parameter
    ]
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


def test_the_kubectl_provider_runs_where_it_can_reach_aws_apis_and_s3(eks_synthesized, eks):
    """Its functions call the EKS and Lambda APIs, read the chart assets from S3 and answer
    CloudFormation's S3 response URL: the subnet they run in needs NAT and the S3 endpoint
    (the control plane's subnets, aws_eks_v2's default, have neither)."""
    network = templates(eks_synthesized)["network"]
    exports = {
        o["Export"]["Name"]: o["Value"].get("Ref") for o in network["Outputs"].values() if "Export" in o
    }
    functions = resources_of(eks, "AWS::Lambda::Function")
    assert len(functions) == 2  # the kubectl handler and its framework's onEvent
    for logical, function in functions.items():
        for subnet in function["Properties"]["VpcConfig"]["SubnetIds"]:
            assert routes_out(network, exports[subnet["Fn::ImportValue"]]) == (True, True), logical


def test_add_ons_that_run_deployments_wait_for_the_system_nodes(eks):
    """coredns, the CSI controllers and cert-manager stay short of ACTIVE without a node to run
    on; the DaemonSet-only add-ons may go first (the nodes need the CNI)."""
    [system] = [
        logical for logical in resources_of(eks, "AWS::EKS::Nodegroup") if logical.startswith("System")
    ]
    after = {
        r["Properties"]["AddonName"]: system in r.get("DependsOn", [])
        for r in resources_of(eks, "AWS::EKS::Addon").values()
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

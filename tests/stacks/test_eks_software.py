"""What the EKS stack installs into the cluster (gpucluster.stacks.eks_software): the
device plugins, the vendored Slinky charts as chart assets, the objects with the Storage
stack's real FSx facts, in that order, with the values and objects synth writes to k8s/."""

from __future__ import annotations

import shutil

import pytest
import yaml

from gpucluster.config.loader import parse_config
from gpucluster.constructs_lib.eks.versions import CERT_MANAGER
from gpucluster.eks import device_plugins, slinky_values
from gpucluster.resolved import resolve
from gpucluster.stacks.eks_software import EFA_CHART, NVIDIA_CHART
from tests.conftest import REPO, resources_of
from tests.eks.helm import CHARTS, Helm, extract_helm
from tests.eks_examples import EKS_EXAMPLE as EXAMPLE
from tests.stacks.eks_software_values import by_release, slurm_objects, values_of


def test_everything_installs_in_one_chain_after_the_nodes_and_add_ons(eks_template):
    releases = by_release(eks_template)
    objects, _ = slurm_objects(eks_template)
    order = [
        releases["nvidia-device-plugin"][0],
        releases["aws-efa-k8s-device-plugin"][0],
        releases["slurm-operator-crds"][0],
        releases["slurm-operator"][0],
        objects,
        releases["slurm"][0],
    ]
    for before, after in zip(order, order[1:], strict=False):
        assert before in eks_template["Resources"][after]["DependsOn"], (before, after)
    first = set(eks_template["Resources"][order[0]]["DependsOn"])
    assert set(resources_of(eks_template, "AWS::EKS::Addon")) <= first
    assert any(logical.startswith("SystemNodeGroup") for logical in first)


def test_the_operator_waits_for_the_cert_manager_add_on(eks_template):
    [cert_manager] = [
        logical
        for logical, r in resources_of(eks_template, "AWS::EKS::Addon").items()
        if r["Properties"]["AddonName"] == CERT_MANAGER
    ]
    _, operator = by_release(eks_template)["slurm-operator"]
    assert cert_manager in operator["DependsOn"]


def test_the_operator_charts_webhook_uses_cert_manager_by_default():
    # Why cert-manager is installed at all: the vendored chart's default.
    values = yaml.safe_load((CHARTS / "slurm-operator" / "values.yaml").read_text())
    assert values["certManager"]["enabled"] is True
    assert "certManager" not in slinky_values.operator_values()


def test_device_plugins_are_vendored_chart_assets_with_our_values(
    eks_synthesized, eks_template, eks_example_resolved
):
    result = eks_synthesized[EXAMPLE]
    releases = by_release(eks_template)
    for release, vendored, expected in (
        ("nvidia-device-plugin", NVIDIA_CHART, device_plugins.nvidia_values()),
        ("aws-efa-k8s-device-plugin", EFA_CHART, device_plugins.efa_values(eks_example_resolved)),
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


def test_device_plugins_run_on_the_tainted_gpu_node_groups(eks_template):
    node_groups = [
        r["Properties"]
        for logical, r in resources_of(eks_template, "AWS::EKS::Nodegroup").items()
        if logical.startswith("Compute")
    ]
    assert node_groups
    releases = by_release(eks_template)
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


def test_a_cluster_without_efa_gets_no_efa_plugin(eks_example_resolved):
    assert device_plugins.efa_instance_types(eks_example_resolved) == ["p5.48xlarge"]
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


def test_slurm_values_are_the_generated_ones_with_the_nodesets(eks_template, eks_example_resolved):
    _, slurm = by_release(eks_template)["slurm"]
    values = values_of(slurm)
    assert values == without_nulls(slinky_values.slurm_values(eks_example_resolved))
    assert set(values["nodesets"]) == {"h100"}
    _, operator = by_release(eks_template)["slurm-operator"]
    assert values_of(operator) == slinky_values.operator_values()
    assert slurm["Properties"]["Namespace"] == "slurm"


def asset_dir(result, resource):
    url = resource["Properties"]["ChartAssetURL"]["Fn::Sub"]
    digest = url.rsplit("/", 1)[1].removesuffix(".zip")
    return result.outdir / f"asset.{digest}"


def test_slinky_charts_are_chart_assets_of_the_vendored_charts(eks_synthesized, eks_template):
    result = eks_synthesized[EXAMPLE]
    releases = by_release(eks_template)
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


def test_real_helm_renders_each_staged_asset_as_deployed(eks_synthesized, eks_template, asset_helm, tmp_path):
    """helm template on the very directories CDK uploads, with the values the template passes
    (no `helm dependency build`: the kubectl provider runs none, so the operator's subchart
    must already be in the asset)."""
    result = eks_synthesized[EXAMPLE]
    rendered = {}
    for release, (_, resource) in by_release(eks_template).items():
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

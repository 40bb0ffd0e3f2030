"""The known ways a Slinky cluster breaks, checked on what helm renders from our values:
GPUs and Gres that disagree, EFA devices left out, pods that cannot land on their node group
or land elsewhere, and Pyxis that silently does nothing."""

from __future__ import annotations

import fnmatch
import re

import pytest

from gpucluster.config.loader import load_config
from gpucluster.efa import efa_count
from gpucluster.eks import images, labels, slinky_values
from gpucluster.resolved import resolve
from tests.conftest import REPO
from tests.eks.conftest import SHAPES

GRES = re.compile(r"\bGres=gpu:(?P<type>[a-z0-9_]+):(?P<count>\d+)\b")


def of_kind(docs, kind):
    return [doc for doc in docs if doc["kind"] == kind]


def nodesets(rendered, clusters, name):
    """(resolved group, its rendered NodeSet) for each group of cluster `name`."""
    by_name = {doc["metadata"]["name"]: doc for doc in of_kind(rendered[name], "NodeSet")}
    return [
        (group, by_name[f"slurm-worker-{slinky_values.nodeset_name(group)}"])
        for group in clusters[name].groups
    ]


def slurmd_limits(nodeset):
    return nodeset["spec"]["slurmd"]["resources"]["limits"]


def tolerates(tolerations, taint: labels.Taint) -> bool:
    """Kubernetes' rule: key equal, value equal (or operator Exists), effect equal or empty."""
    return any(
        t.get("key") == taint.key
        and (t.get("operator") == "Exists" or t.get("value") == taint.value)
        and t.get("effect") in (None, "", taint.effect)
        for t in tolerations
    )


@pytest.mark.parametrize("name", SHAPES)
def test_gpu_limit_equals_gres_count_and_catalog(rendered, clusters, name):
    for group, nodeset in nodesets(rendered, clusters, name):
        gres = GRES.search(nodeset["spec"]["extraConf"])
        assert gres is not None, nodeset["spec"]["extraConf"]
        assert int(gres["count"]) == group.instance.gpu_count
        assert gres["type"] == group.instance.slurm_gpu_type
        assert slurmd_limits(nodeset)[slinky_values.GPU_RESOURCE] == int(gres["count"])


@pytest.mark.parametrize("name", SHAPES)
def test_efa_limit_is_the_catalogs_count(rendered, clusters, name):
    for group, nodeset in nodesets(rendered, clusters, name):
        limits = slurmd_limits(nodeset)
        if group.efa_count > 0:
            assert limits[slinky_values.EFA_RESOURCE] == efa_count(group.instance)
            assert limits[slinky_values.EFA_RESOURCE] == group.instance.max_efa_interfaces
        else:
            assert slinky_values.EFA_RESOURCE not in limits


def test_efa_counts_per_type_are_the_published_ones(rendered, clusters):
    # FACTS.md: 32 EFA on p5, 16 on p5en, 4 on p4d, 4 on g6e.48xlarge.
    expected = {"p5": 32, "p5en": 16, "p4d": 4, "g6e": 4}
    for name, count in expected.items():
        ((_, nodeset),) = nodesets(rendered, clusters, name)
        assert slurmd_limits(nodeset)[slinky_values.EFA_RESOURCE] == count


@pytest.mark.parametrize("name", SHAPES)
def test_nodeset_selects_and_tolerates_its_node_group(rendered, clusters, name):
    for group, nodeset in nodesets(rendered, clusters, name):
        pod = nodeset["spec"]["template"]["spec"]
        node_labels = {**labels.compute_group_labels(group.name), "kubernetes.io/os": "linux"}
        assert pod["nodeSelector"].items() <= node_labels.items()
        assert labels.COMPUTE_GROUP_LABEL in pod["nodeSelector"]
        for taint in labels.compute_group_taints(group.name):
            assert tolerates(pod["tolerations"], taint)


def test_a_nodeset_does_not_tolerate_another_groups_taint(rendered, clusters):
    mixed = clusters["example-mixed"]
    assert len(mixed.groups) > 1
    pairs = nodesets(rendered, clusters, "example-mixed")
    for group, nodeset in pairs:
        tolerations = nodeset["spec"]["template"]["spec"]["tolerations"]
        for other, _ in pairs:
            if other.name != group.name:
                assert not any(tolerates(tolerations, t) for t in labels.compute_group_taints(other.name))


def test_system_pods_land_on_the_system_node_group(rendered):
    for name, docs in rendered.items():
        for kind in ("Controller", "RestApi", "LoginSet"):
            for doc in of_kind(docs, kind):
                selector = doc["spec"]["template"]["spec"]["nodeSelector"]
                assert labels.system_labels().items() <= selector.items(), (name, kind)


def _config_file(docs, file_name):
    for configmap in of_kind(docs, "ConfigMap"):
        if file_name in configmap.get("data", {}):
            return configmap["data"][file_name]
    raise AssertionError(f"no ConfigMap holds {file_name}")


def _slurm_conf_lines(docs):
    """What the chart adds to the slurm.conf the operator writes (the Controller's extraConf)."""
    (controller,) = of_kind(docs, "Controller")
    return controller["spec"]["extraConf"]


@pytest.mark.parametrize("name", [*SHAPES, "example-mixed"])
def test_pyxis_images_and_plugstack_include_agree(rendered, clusters, name):
    docs = rendered[name]
    includes = [
        line.split(None, 1)[1]
        for line in _config_file(docs, "plugstack.conf").splitlines()
        if line.startswith("include ")
    ]
    # The -pyxis images' file is included, and only through a glob (slurmctld has no Pyxis).
    assert any(fnmatch.fnmatch(images.PYXIS_CONF, pattern) for pattern in includes)
    assert all("*" in pattern for pattern in includes)
    version = clusters[name].slurm.version
    for _, nodeset in nodesets(rendered, clusters, name):
        assert (
            nodeset["spec"]["slurmd"]["image"] == f"{images.REGISTRY}/slurmd-pyxis:{version}-{images.FLAVOR}"
        )
    (login,) = of_kind(docs, "LoginSet")
    assert login["spec"]["login"]["image"] == f"{images.REGISTRY}/login-pyxis:{version}-{images.FLAVOR}"


def test_every_slurm_image_runs_the_clusters_release(rendered, clusters):
    for name, docs in rendered.items():
        version = clusters[name].slurm.version
        for doc in of_kind(docs, "Controller"):
            assert doc["spec"]["slurmctld"]["image"].endswith(f":{version}-{images.FLAVOR}"), name
        for doc in of_kind(docs, "RestApi"):
            assert doc["spec"]["slurmrestd"]["image"].endswith(f":{version}-{images.FLAVOR}"), name


def test_gres_conf_autodetects_with_the_driver_not_nvml(rendered):
    # The Slinky images' Slurm is built without NVML (Slurm's debian/rules has no --with-nvml).
    assert _config_file(rendered["p5"], "gres.conf").strip() == "AutoDetect=nvidia"
    assert "GresTypes=gpu" in _slurm_conf_lines(rendered["p5"]).splitlines()


def test_partitions_are_the_ec2_paths(rendered, clusters):
    slurm_conf = _slurm_conf_lines(rendered["example-mixed"])
    for group in clusters["example-mixed"].groups:
        assert re.search(rf"^PartitionName={group.partition} Nodes={group.name} ", slurm_conf, re.M)
    assert re.search(r"^PartitionName=all .*Default=YES", slurm_conf, re.M)


@pytest.mark.parametrize("name", SHAPES)
def test_fsx_and_controller_state_volumes(rendered, clusters, name):
    docs = rendered[name]
    (volume,) = of_kind(docs, "PersistentVolume")
    (claim,) = of_kind(docs, "PersistentVolumeClaim")
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert volume["spec"]["csi"]["driver"] == "fsx.csi.aws.com"
    mount_point = clusters[name].fsx_lustre.mount_point
    for _, nodeset in nodesets(rendered, clusters, name):
        assert {"name": "fsx", "mountPath": mount_point} in nodeset["spec"]["slurmd"]["volumeMounts"]
        claims = [
            v["persistentVolumeClaim"]["claimName"] for v in nodeset["spec"]["template"]["spec"]["volumes"]
        ]
        assert claim["metadata"]["name"] in claims
    (controller,) = of_kind(docs, "Controller")
    (storage_class,) = of_kind(docs, "StorageClass")
    assert controller["spec"]["persistence"]["storageClassName"] == storage_class["metadata"]["name"]
    assert storage_class["provisioner"] == "ebs.csi.aws.com"


def test_accounting_cr_writes_to_the_clusters_database(rendered, clusters):
    database = clusters["example-mixed"].accounting.database
    (accounting,) = of_kind(rendered["example-mixed"], "Accounting")
    storage_config = accounting["spec"]["storageConfig"]
    assert database.host_parameter in storage_config["host"]
    assert (storage_config["port"], storage_config["database"], storage_config["username"]) == (
        database.port,
        database.database_name,
        database.user,
    )
    assert storage_config["passwordKeyRef"] == {"name": "accounting-db", "key": "password"}
    assert of_kind(rendered["p5"], "Accounting") == []


def test_accounting_with_an_external_slurmdbd():
    mixed = load_config(REPO / "examples" / "mixed.yaml")
    external = mixed.accounting.model_copy(update={"database": None, "external": "dbd.example.com:7031"})
    cluster = resolve(mixed.model_copy(update={"accounting": external}))
    assert slinky_values.accounting_values(cluster) == {
        "enabled": True,
        "external": True,
        "externalConfig": {"host": "dbd.example.com", "port": 7031},
    }

"""The real helm lints and renders the vendored charts with the values gpucluster writes, and
every object that comes out passes its schema."""

from __future__ import annotations

import copy

import pytest
import yaml

from gpucluster.eks import slinky_values
from tests.conftest import EXAMPLE_NAMES
from tests.eks import schemas
from tests.eks.conftest import SHAPES


def test_helm_is_the_real_binary(helm):
    assert helm.run("version", "--short").startswith("v4.")


@pytest.mark.parametrize("name", [*SHAPES, *(f"example-{name}" for name in EXAMPLE_NAMES)])
def test_slurm_chart_lints_with_our_values(helm, manifest_dirs, name):
    values = next((manifest_dirs[name] / "values").glob("slurm-v*.yaml"))
    assert "0 chart(s) failed" in helm.lint("slurm", values)


def test_every_cluster_renders_a_nodeset_per_group_and_one_loginset(rendered, clusters):
    for name, docs in rendered.items():
        kinds = [doc["kind"] for doc in docs]
        assert kinds.count("NodeSet") == len(clusters[name].groups), name
        assert kinds.count("LoginSet") == 1, name
        assert kinds.count("Controller") == 1, name


def test_every_rendered_object_passes_its_schema(rendered):
    checked = set()
    for name, docs in rendered.items():
        for doc in docs:
            try:
                schemas.validate(doc)
            except Exception as exc:
                raise AssertionError(f"{name}: {doc['kind']} {doc['metadata'].get('name')}: {exc}") from None
            checked.add(doc["kind"])
    assert {"NodeSet", "LoginSet", "Controller", "RestApi", "PersistentVolume", "ConfigMap"} <= checked


def test_crd_schema_refuses_a_misspelt_field(rendered):
    nodeset = copy.deepcopy(next(d for d in rendered["p5"] if d["kind"] == "NodeSet"))
    nodeset["spec"]["replica"] = 2
    with pytest.raises(AssertionError, match="replica"):
        schemas.validate(nodeset)


def test_kubernetes_schema_refuses_a_bad_volume(rendered):
    volume = copy.deepcopy(next(d for d in rendered["p5"] if d["kind"] == "PersistentVolume"))
    volume["spec"]["accessModes"] = "ReadWriteMany"
    with pytest.raises(Exception, match="ReadWriteMany"):
        schemas.validate(volume)


def test_operator_and_crd_charts_render_and_pass_schemas(helm, tmp_path):
    values = tmp_path / "operator.yaml"
    values.write_text(yaml.safe_dump(slinky_values.operator_values()))
    assert "0 chart(s) failed" in helm.lint("slurm-operator", values)
    operator = helm.template("slurm-operator", values, namespace="slinky")
    assert {doc["kind"] for doc in operator} >= {"Deployment", "ValidatingWebhookConfiguration"}
    for doc in operator:
        if doc["apiVersion"].startswith("cert-manager.io/"):
            continue  # cert-manager's own CRDs are not vendored
        schemas.validate(doc)
    crds = helm.template("slurm-operator-crds", namespace="slinky")
    assert sorted(doc["metadata"]["name"] for doc in crds) == sorted(
        f"{plural}.slinky.slurm.net"
        for plural in ("accountings", "controllers", "loginsets", "nodesets", "restapis", "tokens")
    )
    for doc in crds:
        schemas.validate(doc)

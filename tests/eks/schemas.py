"""Validate rendered objects as the API server would: custom resources against the vendored
CRDs' OpenAPI v3 schemas, built-in kinds against Kubernetes' own (kubernetes-validate)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from tests.eks.helm import CHARTS

# The Kubernetes minor the manifests are checked against (the helm/kubectl layer's, v1.35).
KUBERNETES_VERSION = "1.35.0"


def prune_nulls(value: Any) -> Any:
    """Drop null fields, as the API server does for fields that are not nullable."""
    if isinstance(value, dict):
        return {key: prune_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [prune_nulls(item) for item in value]
    return value


def _closed(schema: Any) -> Any:
    """The schema with unknown fields refused: the API server prunes them silently, so a
    misspelt field would vanish instead of failing; here it fails."""
    if isinstance(schema, dict):
        schema = {key: _closed(item) for key, item in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_closed(item) for item in schema]
    return schema


@cache
def crd_validators() -> dict[tuple[str, str], jsonschema.protocols.Validator]:
    validators = {}
    for path in (CHARTS / "slurm-operator-crds" / "templates").glob("*.yaml"):
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = copy.deepcopy(version["schema"]["openAPIV3Schema"])
            # metadata is the API server's (ObjectMeta), not the CRD's.
            schema["properties"]["metadata"] = {"type": "object"}
            validators[(f"{group}/{version['name']}", kind)] = jsonschema.Draft202012Validator(
                _closed(schema)
            )
    return validators


def validate(doc: dict[str, Any]) -> None:
    """Raise on the first schema violation of `doc`."""
    doc = prune_nulls(doc)
    key = (doc["apiVersion"], doc["kind"])
    if doc["apiVersion"].startswith("slinky.slurm.net/"):
        validator = crd_validators().get(key)
        if validator is None:
            raise AssertionError(f"no vendored CRD for {key}")
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            raise AssertionError(
                "\n".join(f"{doc['kind']} {'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors)
            )
        return
    kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)

"""How CloudFormation updates a resource type, read from the schemas cfn-lint ships.

A change to a `createOnlyProperties` pointer replaces the resource; a change to a
`conditionalCreateOnlyProperties` pointer may replace it (CloudFormation decides at
deploy time, e.g. an instance type change on an instance-store instance). Which types
hold data also comes from cfn-lint (its StatefulResources list), not from us. The
published schema of AWS::FSx::FileSystem lists only top-level create-only properties, yet
the CloudFormation Template Reference documents nested ones as "Update requires:
Replacement" (a deployment-type edit would silently destroy the file system): those are
added from property_rules (REPLACES), each with the page that documents it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from gpucluster.diff.property_rules import documented_replacements


class SchemaUnavailable(RuntimeError):
    """cfn-lint is not installed, so update behaviour cannot be looked up."""


@dataclass(frozen=True)
class UpdateRules:
    """JSON pointers (`/properties/...`) whose change replaces or may replace the resource."""

    resource_type: str
    create_only: tuple[str, ...]
    conditional: tuple[str, ...]
    known: bool


def _schema_manager() -> Any:  # cfnlint's ProviderSchemaManager; cfn-lint ships no types
    try:
        from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
    except ImportError as exc:
        raise SchemaUnavailable(
            "gpucluster diff reads CloudFormation resource schemas from cfn-lint; "
            "install it (`pip install cfn-lint`, or `make setup`)"
        ) from exc
    return PROVIDER_SCHEMA_MANAGER


def resource_schema(resource_type: str, region: str) -> dict[str, Any] | None:
    """The provider schema cfn-lint holds for `resource_type` in `region`, or None."""
    from cfnlint.schema import ResourceNotFoundError

    try:
        schema: dict[str, Any] = _schema_manager().get_resource_schema(region, resource_type).schema
        return schema
    except ResourceNotFoundError:
        return None


@cache
def update_rules(resource_type: str, region: str = "us-east-1") -> UpdateRules:
    """Update behaviour of `resource_type`; `known` is False when no schema describes it."""
    schema = resource_schema(resource_type, region)
    documented = tuple(documented_replacements(resource_type))
    if schema is None:
        return UpdateRules(resource_type, documented, (), known=False)
    create_only = tuple(schema.get("createOnlyProperties", ()))
    create_only += tuple(p for p in documented if p not in create_only)
    conditional = tuple(schema.get("conditionalCreateOnlyProperties", ()))
    return UpdateRules(resource_type, create_only, conditional, known=True)


@cache
def stateful_types() -> frozenset[str]:
    """Types cfn-lint considers to hold data (file systems, volumes, secrets, tables, ...)."""
    _schema_manager()
    from cfnlint.data import AdditionalSpecs

    text = resources.files(AdditionalSpecs).joinpath("StatefulResources.json").read_text()
    return frozenset(json.loads(text)["ResourceTypes"])

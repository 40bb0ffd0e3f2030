"""A template without what varies between identical deployments: asset hashes and
the bookkeeping CDK adds to every stack."""

from __future__ import annotations

from typing import Any

from gpucluster.diff.asset_hashes import mask_asset_hashes
from gpucluster.diff.template_values import Template

CDK_METADATA_TYPE = "AWS::CDK::Metadata"
# cfn-init reads this at run time, so it is configuration, not bookkeeping.
KEPT_METADATA = "AWS::CloudFormation::Init"
CDK_ONLY_ENTRIES = {
    "Parameters": frozenset({"BootstrapVersion"}),
    "Rules": frozenset({"CheckBootstrapVersion"}),
    "Conditions": frozenset({"CDKMetadataAvailable"}),
}


def normalize_template(template: Template) -> Template:
    """The template without what varies between identical deployments (asset hashes,
    CDK bookkeeping); sections left empty are dropped."""
    normalized: Template = {}
    for section, body in template.items():
        if section == "Resources":
            body = {
                logical_id: _without_bookkeeping(resource)
                for logical_id, resource in body.items()
                if resource.get("Type") != CDK_METADATA_TYPE
            }
        elif section in CDK_ONLY_ENTRIES:
            body = {k: v for k, v in body.items() if k not in CDK_ONLY_ENTRIES[section]}
        if body != {}:
            normalized[section] = body
    masked: Template = mask_asset_hashes(normalized)
    return masked


def _without_bookkeeping(resource: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in resource.items() if k != "Metadata"}
    metadata = resource.get("Metadata")
    if isinstance(metadata, dict) and KEPT_METADATA in metadata:
        kept["Metadata"] = {KEPT_METADATA: metadata[KEPT_METADATA]}
    return kept

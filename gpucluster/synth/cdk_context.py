"""What `cdk synth|diff|deploy -c KEY=VALUE` may set, checked before any stack is built.

cdk.json names the demo config as the default of `config`, so `-c config=` (empty)
or a misspelt key (`-c conifg=prod.yaml`) used to synthesize, and could deploy, the
demo cluster without a word. Both are refused here, naming the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from pathlib import Path

from gpucluster.bad_input import BadInput

CONFIG_KEY = "config"
SOURCE = "cdk context"
# Keys the CDK itself writes: feature flags (@aws-cdk/...), what the CLI passes
# (aws:cdk:...), lookup results cached in cdk.context.json (`vpc-provider:account=...`),
# and acknowledged notices.
CDK_KEY_MARKERS = ("@", "aws:cdk:", "cdk:")
CDK_KEYS = frozenset({"acknowledged-issue-numbers"})


def _is_cdk_key(key: str) -> bool:
    return key in CDK_KEYS or key.startswith(CDK_KEY_MARKERS) or ":" in key


def config_path(context: Mapping[str, object], known_keys: Iterable[str]) -> Path:
    """The config file named by `-c config=PATH` (or cdk.json); BadInput for an empty
    value or a key that neither gpucluster nor the CDK reads."""
    known = set(known_keys) | {CONFIG_KEY}
    for key in sorted(context):
        if key in known or _is_cdk_key(key):
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1)
        hint = f"did you mean `-c {close[0]}=...`? " if close else ""
        raise BadInput(
            SOURCE,
            key,
            "is not a context key gpucluster reads, so it would be ignored",
            f"{hint}name the cluster config with `-c {CONFIG_KEY}=PATH`",
        )
    value = context.get(CONFIG_KEY)
    if not isinstance(value, str) or not value.strip():
        raise BadInput(
            SOURCE,
            CONFIG_KEY,
            "is empty" if value in (None, "") or isinstance(value, str) else f"is {value!r}, not a path",
            f"pass the cluster config file: `-c {CONFIG_KEY}=PATH` (e.g. examples/default.yaml)",
        )
    return Path(value)

"""A container image or registry reference in the config, and the rule each follows: no login
in it.

Image references are written into the job scripts on every login node, shipped in the node
bundle in S3, so a password in one (`docker://user:token@registry/...`) reaches everyone who
can read either, and so does a token standing in the user's place (`https://TOKEN@host/...`).
Enroot needs no user in the reference: it takes the login from the credentials file's line for
the registry (for a user without a line there, it asks for a password, which a batch job cannot
type). ECR needs no login of the user's at all.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from gpucluster.config.fields import fail, matching

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# An image pinned by digest ends in `@ALGORITHM:HEX` (the OCI grammar, hex encoded): that `@`
# is no login. A short "digest" (`user@image:v1`) stays a login.
_DIGEST = re.compile(r"@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}$")
_WHERE_LOGINS_GO = (
    "logins stay out of the config, whose image references are written into job scripts every "
    "cluster user can read. ECR images pull with the nodes' instance role "
    "(software.ecr_repositories); for another registry, each user puts `machine REGISTRY login "
    "USER password PASSWORD` in their Enroot credentials file, ~/.config/enroot/.credentials (or "
    "$ENROOT_CONFIG_PATH/.credentials)"
)


def _refuse_login(value: str) -> str:
    scheme = _SCHEME.match(value)
    start = scheme.end() if scheme else 0
    # The last `@` before any digest: a password may hold `@` itself, and masking too much is safe.
    at = _DIGEST.sub("", value[start:]).rfind("@")
    if at < 0:
        return value
    login = value[start : start + at]
    rest = value[start + at + 1 :]
    # Neither part is shown: a token may stand in the user's place.
    held = (
        "a registry login with its password (user:password@)" if ":" in login else "a registry login (user@)"
    )
    raise fail(
        "login",
        f"'{value[:start]}***@{rest}' holds {held}; write '{value[:start]}{rest}': {_WHERE_LOGINS_GO}",
    )


NO_LOGIN = AfterValidator(_refuse_login)
"""The check of every field that names a registry, before its own (whose message shows the value)."""

# Rendered into shell: only what an Enroot or Pyxis reference needs, nothing a shell expands.
ImageReference = Annotated[
    str,
    NO_LOGIN,
    matching(
        r"^[A-Za-z0-9._/:#@+-]+$",
        "image",
        "'{value}' is not an image reference; write [REGISTRY#]IMAGE[:TAG|@DIGEST] "
        "(letters, digits and ._/:#@+-), e.g. nvcr.io#nvidia/pytorch:25.01-py3",
    ),
]

"""The cluster's munge key as gpucluster makes it: 1024 characters.

Secrets Manager generates it at deploy as letters and digits (gpucluster.constructs_lib.
munge_key); a key shared by several clusters is made the README's way, base64 of 768 random
bytes, which is as long. The secret scan (gpucluster.scan.rules) knows key material by this
length, so the two cannot drift apart.
"""

from __future__ import annotations

MUNGE_KEY_LENGTH = 1024

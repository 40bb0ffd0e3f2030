"""Where gpucluster keeps its own files on every node, written once.

It sits at the bottom because the config refuses a mount point over it (config.mount_points);
every path under it is derived in gpucluster.resolved.node_layout.
"""

from __future__ import annotations

NODE_ROOT = "/opt/gpucluster"

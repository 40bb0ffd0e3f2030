"""What the synth hands node_repair: its settings' names in the agents' environment file and
the file it records each replacement in, which the CloudWatch agent ships.

Standard library only, like cluster_names: the synth imports these names, and importing
node_repair itself would load the AWS SDK into every synth.
"""

from __future__ import annotations

from pathlib import Path

ENABLED_SETTING = "GPUCLUSTER_REPLACE_FAILED_NODES"
BOUND_SETTING = "GPUCLUSTER_MAX_REPLACEMENTS_PER_HOUR"
GRACE_SETTING = "GPUCLUSTER_DRAIN_GRACE_MINUTES"
# Each replacement and each ALERT of the bound, one line each.
EVENTS_FILE = Path("/var/log/gpucluster-node-repair/events.log")

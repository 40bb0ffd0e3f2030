"""1,024 GPU nodes (8 groups x 128) stay inside CloudFormation's per-template limits.

Synth time against the default example is a benchmark (`make bench`), not a test.
"""

from __future__ import annotations

import json

import yaml

from bench.large_config import LARGE_GROUPS, LARGE_NODES_PER_GROUP, large_config
from gpucluster.bootstrap.userdata import USER_DATA_LIMIT
from gpucluster.config import ClusterConfig
from gpucluster.synth.app import rendered, synthesize
from gpucluster.synth.summary import user_data_sizes
from tests.conftest import REPO

MAX_RESOURCES = 500
MAX_TEMPLATE_BYTES = 1_000_000


def test_large_cluster_fits_every_template_limit(tmp_path):
    default = yaml.safe_load((REPO / "examples/default.yaml").read_text())
    cfg = ClusterConfig.model_validate(large_config(default))
    assert sum(group.count for group in cfg.compute_groups) == LARGE_GROUPS * LARGE_NODES_PER_GROUP == 1024
    result = synthesize(cfg, tmp_path)
    for name, template in result.templates.items():
        assert len(template["Resources"]) < MAX_RESOURCES, name
        assert len(json.dumps(template)) < MAX_TEMPLATE_BYTES, name
    cluster = result.templates[f"{cfg.name}-cluster"]
    sizes = sorted(
        int(r["Properties"]["MaxSize"])
        for r in cluster["Resources"].values()
        if r["Type"] == "AWS::AutoScaling::AutoScalingGroup"
    )
    assert sizes == [1] + [LARGE_NODES_PER_GROUP] * LARGE_GROUPS, "one login group and the 8 compute groups"
    assert max(user_data_sizes(rendered(cfg)[1], cfg.account, cfg.region).values()) <= USER_DATA_LIMIT
